/**
 * Where a node's fleet keys come from, decided once at start (docs/security.md):
 *
 * - `fleet.open: true` — open mode, no keyring (public experiments);
 * - `fleet.keys` (or `fleet.keysFile`) — keyed mode with those keys, the first signs;
 * - neither, and no bootstrap list — a node on its own: the key in `<dataDir>/fleet.key`, generated
 *   there (mode 0600) on the first start and reused on every later one, so `npm start` is keyed
 *   and others join it with that key;
 * - neither, with a bootstrap list — refused (`CORAL_ERR_FLEET_KEY_REQUIRED`): a node that joins a
 *   fleet must hold its key, and silently falling back to open mode is what an attacker would want.
 *
 * Secrets never reach a log line or an error message; key ids (8 hex digits) do.
 */
import { constants } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Keyring, KeyringError } from '@coral/keyring';
import type { CoralConfig } from '../config/schema.js';
import { envName } from '../config/env.js';
import { FleetKeyError } from '../errors.js';

/** The generated key's file name in the data directory. */
export const FLEET_KEY_FILE = 'fleet.key';

export type KeySource = 'config' | 'keysFile' | 'generated' | 'dataDir';

export type FleetTrust =
  | { mode: 'open' }
  | {
      mode: 'keyed';
      keyring: Keyring;
      /** Where the keys came from. */
      source: KeySource;
      /** The data directory's key file (sources `generated` and `dataDir`). */
      keyFile?: string;
      /** The key file is readable by others than its owner (a warning for the operator). */
      keyFileExposed?: boolean;
    };

const KEYS_ENV = envName('fleet.keys');
const OPEN_ENV = envName('fleet.open');

/** Decide the node's trust mode and build its keyring (see above). */
export async function resolveFleetTrust(config: CoralConfig, dataDir: string): Promise<FleetTrust> {
  if (config.fleet.open) return { mode: 'open' };
  if (config.fleet.keys.length > 0) {
    return {
      mode: 'keyed',
      keyring: parseKeys(config.fleet.keys),
      source: config.fleet.keysFile !== undefined ? 'keysFile' : 'config',
    };
  }
  const keyFile = join(dataDir, FLEET_KEY_FILE);
  const existing = await readKeyFile(keyFile);
  if (config.bootstrap.length > 0) {
    throw new FleetKeyError(
      'CORAL_ERR_FLEET_KEY_REQUIRED',
      `this node joins a fleet (bootstrap ${config.bootstrap.join(', ')}) but has no fleet key. ` +
        `Give it the fleet's key: ${KEYS_ENV}=<key> (fleet.keys in the configuration file; the ` +
        `first node of a fleet started without one wrote it to its <dataDir>/${FLEET_KEY_FILE}, ` +
        `and \`coral-node keygen\` or \`openssl rand -hex 32\` makes a new one)` +
        (existing ? `; ${keyFile} holds a key from an earlier start of this node` : '') +
        `. For an open fleet with no authentication (public experiments only) set ${OPEN_ENV}=true. ` +
        'See docs/security.md.',
    );
  }
  if (existing) {
    return {
      mode: 'keyed',
      keyring: parseKeys(existing.keys, keyFile),
      source: 'dataDir',
      keyFile,
      keyFileExposed: existing.exposed,
    };
  }
  const key = Keyring.generateKey();
  try {
    await writeFile(keyFile, `${key}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another start raced us to it: use what it wrote.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const again = await readKeyFile(keyFile);
    return { mode: 'keyed', keyring: parseKeys(again!.keys, keyFile), source: 'dataDir', keyFile };
  }
  return { mode: 'keyed', keyring: Keyring.parse([key]), source: 'generated', keyFile };
}

/** The keys of a data directory's key file, or undefined when there is none. */
export async function readKeyFile(
  file: string,
): Promise<{ keys: string[]; exposed: boolean } | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const mode = (await stat(file)).mode;
  const keys = text
    .split('\n')
    .map((l) => l.replace(/#.*$/, '').trim())
    .flatMap((l) => l.split(/[\s,]+/))
    .filter(Boolean);
  return { keys, exposed: (mode & (constants.S_IRWXG | constants.S_IRWXO)) !== 0 };
}

/** A keyring from configured keys; a KeyringError becomes a FleetKeyError naming the source. */
function parseKeys(keys: readonly string[], file?: string): Keyring {
  try {
    return Keyring.parse(keys);
  } catch (err) {
    if (!(err instanceof KeyringError)) throw err;
    throw new FleetKeyError(
      'CORAL_ERR_FLEET_KEY_REFUSED',
      `${file ? `${file}: ` : ''}${err.message} (${err.code})`,
      { cause: err },
    );
  }
}
