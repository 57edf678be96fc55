/** What goes back in the OPT record of a response. */
export interface ResponseOpt {
  udpSize: number;
  dnssecOk: boolean;
  /** Echo of the query's ECS option with our scope prefix (RFC 7871 §7.2.1). */
  ecs?: { family: 1 | 2; sourcePrefix: number; scopePrefix: number; address: Uint8Array };
}
