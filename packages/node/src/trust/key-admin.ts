/**
 * The fleet keys as the admin API and SIGHUP change them: list, install, use (make primary),
 * remove, and reload from the configuration. Every refusal is a {@link FleetKeyError} with a
 * stable code and no secret in its message; an open fleet has no keys to change.
 */
import { KeyringError, type KeyInfo, type Keyring } from '@coral/keyring';
import type { FleetKeysView } from '../admin/backend.js';
import type { CoralConfig } from '../config/schema.js';
import { FleetKeyError } from '../errors.js';
import { readKeyFile, type FleetTrust } from './fleet-keys.js';

export class FleetKeyAdmin {
  readonly #trust: () => FleetTrust;

  /** `trust`: the node's trust mode, decided at its start. */
  constructor(trust: () => FleetTrust) {
    this.#trust = trust;
  }

  view(): FleetKeysView {
    const t = this.#trust();
    if (t.mode === 'open') return { mode: 'open', keys: [] };
    const view: FleetKeysView = { mode: 'keyed', keys: t.keyring.list(), source: t.source };
    if (t.keyFile) view.keyFile = t.keyFile;
    return view;
  }

  install(key: string): { id: string; keys: KeyInfo[] } {
    return this.#op((ring) => ({ id: ring.install(key), keys: ring.list() }));
  }

  use(id: string): { keys: KeyInfo[] } {
    return this.#op((ring) => {
      ring.use(id);
      return { keys: ring.list() };
    });
  }

  remove(id: string): { keys: KeyInfo[] } {
    return this.#op((ring) => {
      ring.remove(id);
      return { keys: ring.list() };
    });
  }

  /**
   * SIGHUP: make the keyring what the (re-read) configuration says — `fleet.keys` or
   * `fleet.keysFile`, else the data directory's key file. Run-time changes made through the admin
   * API and not written to the configuration are undone. The mode (keyed or open) needs a restart.
   */
  async reload(config: CoralConfig): Promise<KeyInfo[]> {
    const ring = this.#keyring();
    if (config.fleet.open) {
      throw new FleetKeyError(
        'CORAL_ERR_FLEET_KEY_REFUSED',
        'the configuration now says fleet.open: switching a running node to open mode needs a restart',
      );
    }
    const t = this.#trust();
    let keys = [...config.fleet.keys];
    if (keys.length === 0 && t.mode === 'keyed' && t.keyFile) {
      keys = (await readKeyFile(t.keyFile))?.keys ?? [];
    }
    if (keys.length === 0) {
      throw new FleetKeyError(
        'CORAL_ERR_FLEET_KEY_REQUIRED',
        'the configuration now holds no fleet key: the keys stay as they were',
      );
    }
    return this.#op(() => {
      ring.replace(keys);
      return ring.list();
    });
  }

  #keyring(): Keyring {
    const t = this.#trust();
    if (t.mode === 'keyed') return t.keyring;
    throw new FleetKeyError(
      'CORAL_ERR_FLEET_OPEN',
      'this node runs an open fleet (fleet.open): it has no keys. Restart it with fleet.keys to run keyed',
    );
  }

  /** A key change; a refusal of the keyring becomes a FleetKeyError (no secret in it). */
  #op<T>(op: (ring: Keyring) => T): T {
    const ring = this.#keyring();
    try {
      return op(ring);
    } catch (err) {
      if (err instanceof KeyringError) {
        throw new FleetKeyError('CORAL_ERR_FLEET_KEY_REFUSED', `${err.message} (${err.code})`, {
          cause: err,
        });
      }
      throw err;
    }
  }
}
