/**
 * @coral/keyring — the fleet's shared secrets and what authenticates with them.
 *
 * A fleet shares one or more 32-byte keys (`fleet.keys`); the first signs, all verify, so keys
 * rotate with no downtime (install everywhere, use everywhere, remove everywhere), as HashiCorp
 * memberlist / Serf keyrings do. The DSHT authenticates every datagram with it, node-to-node HTTP
 * every peer request (`HttpPeerSigner`). Only node:crypto underneath (HMAC-SHA-256, HKDF).
 *
 * ```ts
 * import { Keyring, HttpPeerSigner, ReplayGuard } from '@coral/keyring';
 * const ring = Keyring.parse([process.env.KEY_B!, process.env.KEY_A!]); // B signs, A and B verify
 * ring.on('change', (c) => log.info({ primary: c.primaryId, keys: c.ids }, 'fleet keys changed'));
 * const peers = new HttpPeerSigner({ keyring: ring });
 * const header = peers.sign({ method: 'GET', authority: 'a.example.nyud.net:8090', path: '/x' });
 * peers.verify({ method: 'GET', authority: 'a.example.nyud.net:8090', path: '/x', header }); // 'ok'
 * ring.remove(Keyring.keyId(process.env.KEY_A!));
 * ```
 */
export {
  Keyring,
  decodeKey,
  keyIdOf,
  KEY_BYTES,
  KEY_ID_BYTES,
  DERIVE_SALT,
  type KeyInfo,
  type KeyringChange,
} from './keyring.js';
export {
  mac,
  verifyMac,
  macKey,
  MAC_TAG_BYTES,
  MAC_MIN_TAG_BYTES,
  MAC_MAX_TAG_BYTES,
  type MacKey,
  type MacPart,
} from './mac.js';
export {
  ReplayGuard,
  REPLAY_WINDOW_MS,
  REPLAY_MAX_NONCES,
  type ReplayVerdict,
  type ReplayGuardComponents,
  type ReplayGuardOptions,
} from './replay-guard.js';
export {
  HttpPeerSigner,
  PEER_AUTH_HEADER,
  PEER_AUTH_PURPOSE,
  type PeerAuthVerdict,
  type PeerRequest,
  type HttpPeerSignerComponents,
  type HttpPeerSignerOptions,
} from './http-signer.js';
export * from './errors.js';
