/**
 * Issue 28, Must-show 3, with real nodes (DSHT, proxy, TLS listener on 127.0.B.x) and real TLS
 * clients: a client that got a session ticket from node A resumes its session at node B of the same
 * fleet, and no longer once the ticket keys rotated (the shared injected clock crosses an epoch
 * boundary: there is no grace, trust/ticket-keys.ts says why); a node of another fleet never
 * resumes it. The nodes share the fleet's wildcard certificate, as a fleet does.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, issueCert, makeTestCa, tlsVisit, type TestCa } from '@coral/testkit';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { randomSubnet, tmpDir } from '../helpers.js';

const FLEET_KEY = '7e11'.repeat(16);
const OTHER_FLEET_KEY = '0b5e'.repeat(16);
const ROTATION_SECONDS = 60;
const subnet = randomSubnet();
const ip = (host: number) => `127.0.${subnet}.${host}`;
const dir = tmpDir('fleet-resume');
/** The nodes' clock: it moves only when the test says so, for all of them at once. */
const clock = new ManualClock(Date.now());
/** A and B (one fleet key), C (another), in that order whatever order they started in. */
let nodes: CoralNode[] = [];
let ca: TestCa;

async function start(host: string, fleetKey: string): Promise<CoralNode> {
  const config = loadConfig({
    env: {
      CORAL_HOST: host,
      CORAL_DNS_HOST: host,
      CORAL_ADMIN_HOST: host,
      CORAL_DATA_DIR: join(dir, host),
      CORAL_LOG_LEVEL: 'silent',
      CORAL_FLEET_KEYS: fleetKey,
      CORAL_TLS_CERT: join(dir, 'fleet.pem'),
      CORAL_TLS_KEY: join(dir, 'fleet.key.pem'),
      CORAL_TLS_TICKET_KEY_ROTATION_SECONDS: String(ROTATION_SECONDS),
    },
  });
  return CoralNode.start(config, {
    services: realServices,
    logger: createLogger({ level: 'silent' }),
    clock,
  });
}

beforeAll(async () => {
  ca = await makeTestCa({ name: 'fleet zone CA' });
  const leaf = await issueCert(ca, { dnsNames: ['*.nyud.net', 'nyud.net'] });
  await writeFile(join(dir, 'fleet.pem'), leaf.chain);
  await writeFile(join(dir, 'fleet.key.pem'), leaf.key, { mode: 0o600 });
  const started = await Promise.allSettled([
    start(ip(1), FLEET_KEY),
    start(ip(2), FLEET_KEY),
    start(ip(3), OTHER_FLEET_KEY),
  ]);
  nodes = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}, 60_000);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
});

describe.each(['TLSv1.2', 'TLSv1.3'] as const)('fleet-wide TLS resumption (%s)', (version) => {
  const visit = (host: string, session?: Buffer) =>
    tlsVisit({
      host,
      port: 8443,
      servername: 'www-example-com.nyud.net',
      ca: ca.cert,
      maxVersion: version,
      minVersion: version,
      ...(session ? { session } : {}),
    });

  it('a ticket from node A resumes at node B, never at a node of another fleet, and not after the keys rotated', async () => {
    const [a, b] = nodes;
    expect(a!.ticketKeys?.source).toBe('fleet');
    const epoch = a!.ticketKeys!.epoch;
    expect(b!.ticketKeys!.epoch).toBe(epoch);
    // What an operator compares across members (GET /v1/node): equal in one fleet only.
    const fingerprints = () => nodes.map((n) => n.view.info().tlsTicketKeys!.fingerprint);
    const [fa, fb, fc] = fingerprints();
    expect(fb).toBe(fa);
    expect(fc).not.toBe(fa);

    const first = await visit(ip(1));
    expect(first.reused).toBe(false);
    expect(first.protocol).toBe(version);
    expect((await visit(ip(2), first.session)).reused).toBe(true);
    expect((await visit(ip(1), first.session)).reused).toBe(true);
    expect((await visit(ip(3), first.session)).reused).toBe(false);

    // To the next epoch boundary: every member swaps in the next keys at the same moment.
    await clock.advanceTo((epoch + 1) * ROTATION_SECONDS * 1000);
    expect(nodes.map((n) => n.ticketKeys!.epoch)).toEqual([epoch + 1, epoch + 1, epoch + 1]);
    const rotated = fingerprints();
    expect(rotated[0]).not.toBe(fa);
    expect(rotated[1]).toBe(rotated[0]);
    expect((await visit(ip(2), first.session)).reused).toBe(false);
    expect((await visit(ip(1), first.session)).reused).toBe(false);
    // A ticket of the new epoch resumes fleet-wide again.
    const fresh = await visit(ip(2));
    expect((await visit(ip(1), fresh.session)).reused).toBe(true);
    expect((await visit(ip(3), fresh.session)).reused).toBe(false);
  });
});
