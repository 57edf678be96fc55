/**
 * Authentication of node-to-node HTTP (peer fetch). The proxy only defines the interface; the
 * fleet keyring (`@coral/keyring`'s `HttpPeerSigner`) implements it with a MAC over the request
 * under the fleet's keys, a timestamp window and a nonce memory against replay.
 *
 * What is signed: the request method (`GET`), the authority exactly as sent in the `Host` header
 * of the peer request (the client's Coralized or site name, which the peer maps the same way),
 * and the request target exactly as sent (canonical path and query). The receiving proxy verifies
 * the same three from the request it received, before it routes or looks anything up.
 */

/** Signs outgoing peer requests and verifies incoming ones (header `Coral-Peer-Auth`). */
export interface PeerAuth {
  /** The value of `Coral-Peer-Auth` for an outgoing peer request. */
  sign(req: { method: string; authority: string; path: string }): string;
  /**
   * `'ok'` when `header` authenticates this request; otherwise a short reason (`missing`,
   * `malformed`, `unknown-key`, `bad-mac`, `stale`, `replayed`…), used as a metric label.
   */
  verify(req: {
    method: string;
    authority: string;
    path: string;
    header: string | undefined;
  }): string;
}
