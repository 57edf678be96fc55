/**
 * Start step "fleet keys": keyed (the default) or open, decided before anything listens — a
 * joining node with no key stops here (trust/fleet-keys.ts). Also what the node logs of its keys
 * while it runs: keyring changes, isolation from the fleet and peers' key notices.
 */
import type { DshtAuthState, KeyRejection } from '@coral/dsht';
import type { Keyring } from '@coral/keyring';
import type { Logger } from 'pino';
import { resolveFleetTrust } from '../../trust/fleet-keys.js';
import type { NodeState } from '../state.js';
import { step } from './step.js';

/** Decide the fleet's keys (into `s.trust`); the keyring in keyed mode. */
export async function fleetKeys(s: NodeState, dataDir: string): Promise<Keyring | undefined> {
  const { logger } = s;
  s.trust = await step('fleet keys', () => resolveFleetTrust(s.config, dataDir));
  const keyring = s.trust.mode === 'keyed' ? s.trust.keyring : undefined;
  if (s.trust.mode === 'keyed' && s.trust.keyFileExposed) {
    logger.warn(
      { keyFile: s.trust.keyFile },
      'the fleet key file is readable by other users: chmod 600 it',
    );
  }
  keyring?.on('change', (c) =>
    logger.info(
      { change: c.kind, keyId: c.id, primaryKeyId: c.primaryId, keyIds: c.ids },
      'fleet keys changed',
    ),
  );
  return keyring;
}

/** The DSHT's isolation began or ended (keyed mode). */
export function logIsolation(logger: Logger, state: DshtAuthState): void {
  if (state.isolated) {
    logger.error(
      { component: 'fleet', unknownKeyIds: state.unknownKeyIds, keyIds: state.keyIds },
      `this node is isolated from its fleet: ${state.reason ?? 'no authenticated DSHT traffic'}. ` +
        "Give it the fleet's current key (coral-node keys install, or fleet.keys and SIGHUP); " +
        '/readyz answers not ready until it authenticates traffic again',
    );
  } else {
    logger.warn(
      { component: 'fleet', keyIds: state.keyIds },
      'this node is no longer isolated: it authenticates DSHT traffic again',
    );
  }
}

/**
 * A peer's key notice (at most one report a minute): it does not accept this node's key id. The
 * notice is unauthenticated — a hint, which changes nothing — so this is a log line (and the
 * `coral_fleet_key_rejected_total` metric) only.
 */
export function logKeyRejected(logger: Logger, r: KeyRejection): void {
  const by = r.from.ip.includes(':')
    ? `[${r.from.ip}]:${r.from.port}`
    : `${r.from.ip}:${r.from.port}`;
  const entry = { component: 'fleet', keyId: r.keyId, answeredBy: by, notices: r.notices };
  if (r.fleetHeard) {
    logger.warn(
      entry,
      `fleet member ${by} does not accept this node's key id ${r.keyId}: it lacks this key ` +
        '(a rotation step missed there?); this node still authenticates the rest of its fleet',
    );
  } else {
    logger.error(
      entry,
      `the fleet does not accept this node's key id ${r.keyId} (answered by ${by}): check ` +
        "CORAL_FLEET_KEYS (fleet.keys or fleet.keysFile) — it must hold the fleet's current key",
    );
  }
}
