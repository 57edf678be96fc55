/**
 * Fleet keys at the node's edge: the configuration (`fleet.keys`, `CORAL_FLEET_KEYS`,
 * `fleet.keysFile`, `fleet.open`) with bad entries named and never echoed; the start-up decision
 * (configured keys, open mode, a key generated into the data directory with mode 0600 and reused,
 * a joining node without a key refused with CORAL_ERR_FLEET_KEY_REQUIRED); and a running keyed
 * node's key rotation through the admin API, the CLI and SIGHUP, its banner, readiness and metrics.
 */
import { EventEmitter } from 'node:events';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keyring } from '@coral/keyring';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/program.js';
import { loadConfig } from '../../src/config/index.js';
import { CoralNode } from '../../src/compose/node.js';
import { runNode } from '../../src/compose/run.js';
import { realServices } from '../../src/compose/services.js';
import { ConfigError, FleetKeyError } from '../../src/errors.js';
import { createLogger } from '../../src/logging/logger.js';
import { FLEET_KEY_FILE, resolveFleetTrust } from '../../src/trust/fleet-keys.js';
import { cliAt, randomSubnet, tmpDir, waitFor } from '../helpers.js';

const A = Keyring.generateKey();
const B = Buffer.from(Keyring.generateKey(), 'hex').toString('base64');
const idA = Keyring.keyId(A);
const idB = Keyring.keyId(B);

function issues(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).issues];
  }
  throw new Error('expected a ConfigError');
}

describe('fleet keys in the configuration', () => {
  it('reads CORAL_FLEET_KEYS (hex and base64, comma-separated), first key first', () => {
    const c = loadConfig({ env: { CORAL_FLEET_KEYS: `${A},${B}` } });
    expect(c.fleet).toMatchObject({ keys: [A, B], open: false });
  });

  it('names a bad entry without repeating it', () => {
    const secretish = 'f'.repeat(63);
    const found = issues(() => loadConfig({ env: { CORAL_FLEET_KEYS: `${A},${secretish}` } }));
    expect(found).toHaveLength(1);
    expect(found[0]!.path).toBe('fleet.keys.1');
    expect(found[0]!.message).toMatch(/32 bytes written as 64 hex digits or base64/);
    expect(JSON.stringify(found)).not.toContain(secretish);
    expect(JSON.stringify(found)).not.toContain(A);
  });

  it('refuses keys together with open mode, and keys in two places', () => {
    const both = issues(() =>
      loadConfig({ env: { CORAL_FLEET_KEYS: A, CORAL_FLEET_OPEN: 'true' } }),
    );
    expect(both.map((i) => i.path)).toEqual(['fleet.open']);
    const dir = tmpDir('keys-file');
    const file = join(dir, 'keys');
    writeFileSync(file, `${B}\n`);
    const two = issues(() =>
      loadConfig({ env: { CORAL_FLEET_KEYS: A, CORAL_FLEET_KEYS_FILE: file } }),
    );
    expect(two.map((i) => i.path)).toEqual(['fleet.keysFile']);
  });

  it('reads fleet.keysFile (comments, one key per line), naming a bad line', () => {
    const dir = tmpDir('keys-file');
    const file = join(dir, 'keys');
    writeFileSync(file, `# the fleet's keys, signing key first\n${B}\n${A}  # old key\n\n`);
    expect(loadConfig({ env: { CORAL_FLEET_KEYS_FILE: file } }).fleet.keys).toEqual([B, A]);
    writeFileSync(file, `${B}\nnot-a-key\n`);
    const bad = issues(() => loadConfig({ env: { CORAL_FLEET_KEYS_FILE: file } }));
    expect(bad).toHaveLength(1);
    expect(bad[0]!.message).toMatch(/key on line 2/);
    expect(JSON.stringify(bad)).not.toContain(B);
    const missing = issues(() => loadConfig({ env: { CORAL_FLEET_KEYS_FILE: join(dir, 'none') } }));
    expect(missing[0]!.message).toMatch(/cannot read/);
  });
});

describe('the start-up decision', () => {
  it('generates a key into the data directory (mode 0600) and reuses it on restart', async () => {
    const dataDir = tmpDir('keygen');
    const config = loadConfig({ env: { CORAL_DATA_DIR: dataDir } });
    const first = await resolveFleetTrust(config, dataDir);
    expect(first).toMatchObject({ mode: 'keyed', source: 'generated' });
    const file = join(dataDir, FLEET_KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const written = readFileSync(file, 'utf8').trim();
    expect(written).toMatch(/^[0-9a-f]{64}$/);
    const again = await resolveFleetTrust(config, dataDir);
    expect(again).toMatchObject({ mode: 'keyed', source: 'dataDir', keyFileExposed: false });
    if (first.mode !== 'keyed' || again.mode !== 'keyed') throw new Error('keyed');
    expect(again.keyring.primaryId).toBe(first.keyring.primaryId);
    expect(first.keyring.primaryId).toBe(Keyring.keyId(written));
  });

  it('refuses a joining node without a key, saying how to give it one', async () => {
    const dataDir = tmpDir('nokey');
    const config = loadConfig({
      env: { CORAL_DATA_DIR: dataDir, CORAL_BOOTSTRAP: '127.0.0.1:8091' },
    });
    const err = await resolveFleetTrust(config, dataDir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FleetKeyError);
    expect(err).toMatchObject({ code: 'CORAL_ERR_FLEET_KEY_REQUIRED' });
    expect((err as Error).message).toMatch(/CORAL_FLEET_KEYS=<key>/);
    expect((err as Error).message).toMatch(/CORAL_FLEET_OPEN=true/);
    // Nothing written: a refused node leaves no key behind.
    expect(() => statSync(join(dataDir, FLEET_KEY_FILE))).toThrow();
  });

  it('uses configured keys, or none in open mode', async () => {
    const dataDir = tmpDir('conf');
    const keyed = await resolveFleetTrust(
      loadConfig({ env: { CORAL_FLEET_KEYS: `${B},${A}`, CORAL_BOOTSTRAP: '127.0.0.1:8091' } }),
      dataDir,
    );
    if (keyed.mode !== 'keyed') throw new Error('keyed');
    expect(keyed.keyring.list()).toEqual([
      { id: idB, primary: true },
      { id: idA, primary: false },
    ]);
    const open = await resolveFleetTrust(
      loadConfig({ env: { CORAL_FLEET_OPEN: 'true', CORAL_BOOTSTRAP: '127.0.0.1:8091' } }),
      dataDir,
    );
    expect(open).toEqual({ mode: 'open' });
  });

  it('makes `coral-node start` exit with code 2 and the stable code when a joiner has no key', async () => {
    let err = '';
    const io: CliIo = {
      stdout: { write: () => true },
      stderr: { write: (s: string) => (err += s) },
      env: {},
    };
    const config = loadConfig({
      env: {
        CORAL_DATA_DIR: tmpDir('nokey-run'),
        CORAL_BOOTSTRAP: '127.0.0.1:8091',
        CORAL_LOG_LEVEL: 'silent',
      },
    });
    expect(await runNode(config, io, realServices, new EventEmitter())).toBe(2);
    expect(err).toMatch(/^coral-node: CORAL_ERR_FLEET_KEY_REQUIRED: this node joins a fleet/);
  });
});

describe('a running keyed node', () => {
  const subnet = randomSubnet();
  const ip = `127.0.${subnet}.31`;
  const dir = tmpDir('trust-node');
  let node: CoralNode;

  const admin = (method: string, url: string, body?: unknown) =>
    node.admin
      .handle({
        method,
        url,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        remoteAddress: '127.0.0.1',
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      .then((r) => ({ status: r.status, body: r.body, json: () => JSON.parse(r.body) }));

  const cli = (...args: string[]) => cliAt(`http://${ip}:8092`, ...args);

  beforeAll(async () => {
    node = await CoralNode.start(
      loadConfig({
        env: {
          CORAL_HOST: ip,
          CORAL_DNS_HOST: ip,
          CORAL_ADMIN_HOST: ip,
          CORAL_DATA_DIR: dir,
          CORAL_LOG_LEVEL: 'silent',
        },
      }),
      { services: realServices, logger: createLogger({ level: 'silent' }) },
    );
  });
  afterAll(() => node?.stop());

  it('prints how to join others to it: the key file, never the key', () => {
    const banner = node.banner();
    const keyFile = join(dir, FLEET_KEY_FILE);
    const key = readFileSync(keyFile, 'utf8').trim();
    expect(banner).toContain(`generated now into ${keyFile}`);
    expect(banner).toContain(
      `CORAL_FLEET_KEYS=$(cat ${keyFile}) CORAL_BOOTSTRAP=${ip}:8091 npx coral-node start`,
    );
    expect(banner).not.toContain(key);
  });

  it('lists, installs, uses and removes keys by id, never echoing a secret', async () => {
    const first = (await admin('GET', '/v1/fleet/keys')).json();
    expect(first).toMatchObject({ mode: 'keyed', source: 'generated' });
    const generated = first.keys[0].id as string;
    const installed = await admin('POST', '/v1/fleet/keys', { key: B });
    expect(installed.status).toBe(200);
    expect(installed.json().id).toBe(idB);
    expect(installed.body).not.toContain(B);
    // The primary cannot be removed; a key id must look like one.
    const refused = await admin('DELETE', `/v1/fleet/keys/${generated}`);
    expect(refused.status).toBe(409);
    expect(refused.json().error.code).toBe('CORAL_ERR_FLEET_KEY_REFUSED');
    expect((await admin('DELETE', '/v1/fleet/keys/zz')).status).toBe(400);
    const unknown = await admin('POST', '/v1/fleet/keys/0badc0de/use');
    expect(unknown.json().error.code).toBe('CORAL_ERR_FLEET_KEY_REFUSED');
    const bad = await admin('POST', '/v1/fleet/keys', { key: 'abc' });
    expect(bad.status).toBe(409);
    expect(bad.body).not.toContain('"abc"');
    expect((await admin('POST', `/v1/fleet/keys/${idB}/use`)).json().keys).toEqual([
      { id: idB, primary: true },
      { id: generated, primary: false },
    ]);
    expect((await admin('DELETE', `/v1/fleet/keys/${generated}`)).json().keys).toEqual([
      { id: idB, primary: true },
    ]);
  });

  it('offers the same through the CLI (keys list|install|use|remove|status, keygen)', async () => {
    const gen = await cli('keygen');
    expect(gen.code).toBe(0);
    const C = gen.out.trim();
    expect(C).toMatch(/^[0-9a-f]{64}$/);
    const idC = Keyring.keyId(C);
    const inst = await cli('keys', 'install', C);
    expect(inst.code).toBe(0);
    expect(inst.out).not.toContain(C);
    expect(JSON.parse((await cli('keys', 'use', idC)).out).keys[0]).toEqual({
      id: idC,
      primary: true,
    });
    const primaryRemoved = await cli('keys', 'remove', idC);
    expect(primaryRemoved.code).toBe(1);
    expect(primaryRemoved.err).toMatch(/CORAL_ERR_FLEET_KEY_REFUSED/);
    expect((await cli('keys', 'remove', idB)).code).toBe(0);
    expect(JSON.parse((await cli('keys', 'list')).out).keys).toEqual([{ id: idC, primary: true }]);
    const status = JSON.parse((await cli('keys', 'status')).out);
    expect(status).toMatchObject({ mode: 'keyed', isolated: false, keyIds: [idC] });
    expect(JSON.stringify(status)).not.toContain(C);
  });

  it('is ready with a fleetKeys check, and exports the trust metrics', async () => {
    const ready = (await admin('GET', '/readyz')).json();
    expect(ready).toMatchObject({ ready: true, checks: { fleetKeys: true } });
    const text = (await admin('GET', '/metrics')).body;
    expect(text).toMatch(/coral_dsht_datagrams_dropped_total\{reason="unauthenticated"\} 0/);
    expect(text).toMatch(/coral_peer_requests_rejected_total\{reason="missing"\} 0/);
    expect(text).toMatch(/coral_peer_holders_skipped_total\{reason="not-member"\} 0/);
    expect(text).toMatch(/^coral_fleet_isolated 0$/m);
    expect(text).toMatch(/^coral_fleet_keys 1$/m);
  });
});

describe('SIGHUP', () => {
  it('makes the keyring what the re-read configuration says; a bad one changes nothing', async () => {
    const subnet = randomSubnet();
    const ip = `127.0.${subnet}.32`;
    const dir = tmpDir('sighup');
    const keysFile = join(dir, 'keys');
    writeFileSync(keysFile, `${A}\n`);
    const env = {
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_DATA_DIR: join(dir, 'data'),
      CORAL_LOG_LEVEL: 'silent',
      CORAL_FLEET_KEYS_FILE: keysFile,
    };
    const signals = new EventEmitter();
    let out = '';
    const io: CliIo = {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: () => true },
      env,
    };
    const exited = runNode(loadConfig({ env }), io, realServices, signals, async () =>
      loadConfig({ env }),
    );
    await waitFor(() => out.includes('Fleet: keyed'), 20_000, 'the banner');
    expect(out).toContain('from fleet.keysFile');
    const keys = () =>
      fetch(`http://${ip}:8092/v1/fleet/keys`).then(
        (r) => r.json() as Promise<{ keys: { id: string }[] }>,
      );
    expect((await keys()).keys.map((k) => k.id)).toEqual([idA]);
    writeFileSync(keysFile, `${B}\n${A}\n`);
    signals.emit('SIGHUP');
    await waitFor(async () => (await keys()).keys[0]?.id === idB, 10_000, 'B primary');
    expect((await keys()).keys.map((k) => k.id)).toEqual([idB, idA]);
    writeFileSync(keysFile, 'garbage\n');
    signals.emit('SIGHUP');
    writeFileSync(keysFile, `${B}\n`);
    signals.emit('SIGHUP');
    await waitFor(async () => (await keys()).keys.length === 1, 10_000, 'A removed');
    expect((await keys()).keys.map((k) => k.id)).toEqual([idB]);
    signals.emit('SIGTERM');
    expect(await exited).toBe(0);
  });
});
