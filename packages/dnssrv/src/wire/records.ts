/** The records the server answers with, as plain data (encoded by `encode.ts`). */
export type ResourceRecord =
  | { type: 'A'; name: string; ttl: number; address: string }
  | { type: 'AAAA'; name: string; ttl: number; address: string }
  | { type: 'CNAME'; name: string; ttl: number; target: string }
  | { type: 'NS'; name: string; ttl: number; host: string }
  /** One character-string (≤ 255 bytes) per record. */
  | { type: 'TXT'; name: string; ttl: number; text: string }
  | {
      type: 'SOA';
      name: string;
      ttl: number;
      mname: string;
      rname: string;
      serial: number;
      refresh: number;
      retry: number;
      expire: number;
      minimum: number;
    };

/** What goes back in the OPT record of a response. */
export interface ResponseOpt {
  udpSize: number;
  dnssecOk: boolean;
  /** Echo of the query's ECS option with our scope prefix (RFC 7871 §7.2.1). */
  ecs?: { family: 1 | 2; sourcePrefix: number; scopePrefix: number; address: Uint8Array };
}

export interface ResponseSpec {
  id: number;
  rd: boolean;
  cd: boolean;
  aa: boolean;
  /** 0..15, or 16 (BADVERS) which needs `opt`. */
  rcode: number;
  question: { name: string; type: number; class: number };
  answers: ResourceRecord[];
  authorities: ResourceRecord[];
  additionals: ResourceRecord[];
  opt?: ResponseOpt;
}
