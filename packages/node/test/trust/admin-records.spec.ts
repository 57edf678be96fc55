/**
 * Admin records over three real keyed DSHTs on loopback UDP (trust/admin-records.ts): a member's
 * admin port is the one it published itself. A third member of the same fleet (it holds the key)
 * stores a forged record under another member's key, naming a port of its choosing: the forged
 * value travels the real wire and sits in the real value store, and is never believed, because
 * its publisher is the forger. Before the member published, its port is unknown (never this
 * node's own, never the forger's); after, the published one, from the cache until it is asked
 * fresh.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyring } from '@coral/keyring';
import { ManualClock, systemClock, type Clock } from '@coral/testkit';
import { loadConfig } from '../../src/config/load.js';
import { realServices } from '../../src/compose/services.js';
import type { DshtPort } from '../../src/compose/ports.js';
import { createLogger } from '../../src/logging/logger.js';
import { CoralMetrics } from '../../src/metrics/metrics.js';
import {
  ADMIN_RECORD_CACHE_MS,
  AdminRecords,
  adminRecordKey,
  decodeAdminRecord,
  encodeAdminRecord,
} from '../../src/trust/admin-records.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const subnet = randomSubnet();
const dir = tmpDir('admin-records');
const key = Keyring.generateKey();
const config = loadConfig({ env: {} });
const dshts: DshtPort[] = [];
const hex = (d: DshtPort) => Buffer.from(d.contact.id).toString('hex');

async function dsht(ip: string, bootstrap?: string): Promise<DshtPort> {
  const d = await realServices.dsht({
    config,
    logger: createLogger({ level: 'silent' }),
    metrics: new CoralMetrics(),
    bind: { host: ip, port: 8091 },
    advertise: ip,
    dataDir: join(dir, ip),
    service: { httpPort: 8090 },
    keyring: Keyring.parse([key]),
  });
  await d.start({ bootstrap: bootstrap ? [bootstrap] : [] });
  dshts.push(d);
  return d;
}

/** The reader's clock: its waits between lookups of a missing record pass at once. */
const impatient: Clock = {
  now: () => Date.now(),
  setTimeout: (fn) => {
    queueMicrotask(fn);
    return { cancel: () => undefined };
  },
};

let a: DshtPort;
let b: DshtPort;
let forger: DshtPort;

beforeAll(async () => {
  a = await dsht(`127.0.${subnet}.1`);
  b = await dsht(`127.0.${subnet}.2`, `127.0.${subnet}.1:8091`);
  forger = await dsht(`127.0.${subnet}.3`, `127.0.${subnet}.1:8091`);
  await waitFor(
    () => dshts.every((d) => d.members().length === 2),
    20_000,
    'three members that verify each other',
  );
}, 30_000);

afterAll(async () => {
  for (const d of dshts) await d.stop();
});

describe('admin records', () => {
  it('round-trips and refuses what is not a record', () => {
    const id = 'ab'.repeat(20);
    expect(decodeAdminRecord(encodeAdminRecord({ nodeId: id, adminPort: 8192 }))).toEqual({
      nodeId: id,
      adminPort: 8192,
    });
    expect(decodeAdminRecord(new Uint8Array([1, 2, 3]))).toBeUndefined();
    expect(decodeAdminRecord(encodeAdminRecord({ nodeId: id, adminPort: 0 }))).toBeUndefined();
  });

  it("believes only the member's own record, never one another member stored for it", async () => {
    const member = { nodeId: hex(b), ip: b.contact.ip };
    // The forger (a member: it holds the fleet's key) puts a record under b's key naming port 6666.
    await forger.put(
      adminRecordKey(hex(b)),
      encodeAdminRecord({ nodeId: hex(b), adminPort: 6666 }),
      600,
    );
    const seen = await a.get(adminRecordKey(hex(b)));
    expect(seen.values.map((v) => decodeAdminRecord(v)?.adminPort)).toContain(6666);
    const reader = new AdminRecords(
      { dsht: a, clock: impatient },
      { nodeId: hex(a), adminPort: 8092 },
    );
    expect(await reader.port(member, { patient: true })).toBeUndefined();

    // b publishes its own: that one is believed, the forged one still not.
    const publisher = new AdminRecords(
      { dsht: b, clock: systemClock },
      { nodeId: hex(b), adminPort: 8192 },
    );
    publisher.start();
    try {
      await waitFor(
        async () => (await reader.port(member, { fresh: true })) !== undefined,
        10_000,
        "b's record",
      );
      expect(await reader.port(member)).toBe(8192);

      // A restart on another port: the cached answer stays until asked fresh.
      const moved = new AdminRecords(
        { dsht: b, clock: systemClock },
        { nodeId: hex(b), adminPort: 8292 },
      );
      await moved.publish();
      expect(await reader.port(member)).toBe(8192);
      expect(await reader.port(member, { fresh: true })).toBe(8292);
    } finally {
      publisher.stop();
    }
  });

  it("keeps a member's last port when a later lookup finds nothing, until a request to it fails", async () => {
    const id = 'cd'.repeat(20);
    const member = { nodeId: id, ip: '127.0.0.9' };
    let records: { publisher: Uint8Array; value: Uint8Array }[] = [
      {
        publisher: Buffer.from(id, 'hex'),
        value: encodeAdminRecord({ nodeId: id, adminPort: 8392 }),
      },
    ];
    const store = {
      get: async () => ({ records }),
      put: async () => undefined,
      members: () => [],
    };
    const clock = new ManualClock(0);
    const reader = new AdminRecords(
      { dsht: store, clock },
      { nodeId: 'ef'.repeat(20), adminPort: 8092 },
    );
    expect(await reader.port(member)).toBe(8392);
    records = []; // the DSHT answers nothing (a busy fleet, a lookup that timed out)
    await clock.advance(ADMIN_RECORD_CACHE_MS + 1);
    expect(await reader.port(member)).toBe(8392);
    expect(await reader.port(member, { fresh: true })).toBeUndefined();
    expect(await reader.port(member)).toBeUndefined();
  });
});
