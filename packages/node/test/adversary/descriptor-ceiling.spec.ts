/**
 * Adversary: the descriptor limit reached (issue 31). A real node (`coral-node start`) in a child
 * process with `ulimit -n 256`, its proxy flooded with idle connections from six addresses —
 * more than the limit itself. Before, such a flood made legitimate requests fail and then an
 * uncaught EMFILE (the heap trim's `process.memoryUsage.rss()`) killed the whole process. Now the
 * node derives its client-connection ceiling from the limit (256 → 128, keeping 128 descriptors
 * for itself), sheds its longest-idle connections to admit new ones, and keeps answering HTTP,
 * DNS, the DSHT and the admin API; the process stays up and its stderr holds no uncaught error.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_PATH, stopProcess } from '../../src/fleet/launcher.js';
import { fetchVia, resolveThrough } from '../../src/fleet/client.js';
import { nodeProcessEnv } from '../../src/fleet/launcher.js';
import { Attacker } from './attacker.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const B = randomSubnet();
const IP = `127.0.${B}.11`;
const KEY = randomBytes(32).toString('hex');
const ports = { proxy: 8090, dsht: 8091, dns: 5353, admin: 8092 };
let child: ChildProcess;
let stdout = '';
let stderr = '';
const flood: net.Socket[] = [];

const metric = async (name: string): Promise<number> => {
  const text = await (await fetch(`http://${IP}:${ports.admin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
};

beforeAll(async () => {
  child = spawn(
    'sh',
    ['-c', 'ulimit -n 256 && exec "$0" "$@"', process.execPath, CLI_PATH, 'start'],
    {
      env: nodeProcessEnv({
        CORAL_DATA_DIR: tmpDir('fd-ceiling'),
        CORAL_HOST: IP,
        CORAL_DNS_HOST: IP,
        CORAL_ADMIN_HOST: IP,
        CORAL_FLEET_KEYS: KEY,
        CORAL_LOG_LEVEL: 'info',
        // The trim's timer checks every 100 ms: it runs all through the flood.
        CORAL_HEAP_TRIM_INTERVAL_MS: '1000',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitFor(
    () =>
      fetch(`http://${IP}:${ports.admin}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
    30_000,
    'the node to start',
  );
});

afterAll(async () => {
  for (const s of flood) s.destroy();
  if (child) await stopProcess(child, 5_000);
});

describe('adversary: the descriptor ceiling (ulimit -n 256)', () => {
  it('derives its ceiling from the limit in effect, and says so', async () => {
    expect(await metric('coral_connections_ceiling')).toBe(128);
    expect(await metric('coral_descriptor_limit{kind="soft"}')).toBe(256);
    expect(stdout).toMatch(/"ceiling":128.*client connection ceiling/);
  });

  it('300 idle connections from six addresses: oldest shed first, every service still answers, no crash', async () => {
    // 50 idle connections from each of six addresses (within the per-client and per-/24 caps):
    // more than the process has descriptors, all accepted at the cost of the longest idle ones.
    for (let a = 1; a <= 6; a++) {
      for (let i = 0; i < 50; i++) {
        const s = net.connect({ port: ports.proxy, host: IP, localAddress: `127.0.${B + 1}.${a}` });
        s.on('error', () => {});
        flood.push(s);
        await once(s, 'connect');
      }
    }
    await waitFor(
      async () =>
        (await metric('coral_connections_closed_total{listener="http",reason="shed"}')) >=
        300 - 128,
      20_000,
      'shedding',
    );
    expect(await metric('coral_connections_open{listener="http"}')).toBeLessThanOrEqual(128);
    // Oldest first: the first connections of the flood are gone, the last ones still open.
    await waitFor(() => flood[0]!.closed, 10_000, 'the oldest connection closed');
    expect(flood.at(-1)!.closed).toBe(false);

    // HTTP: a client is served (this name is not Coralized: the proxy's own 4xx page).
    const page = await fetchVia({ ip: IP, port: ports.proxy }, 'not-coralized.example', '/', {
      localAddress: `127.0.${B + 2}.1`,
    });
    expect(page.status).toBeGreaterThanOrEqual(400);
    expect(page.status).toBeLessThan(500);
    // DNS: a Coralized name resolves to this node.
    expect(
      await resolveThrough({ ip: IP, port: ports.dns }, 'www.example.com.nyud.net', {
        localAddress: `127.0.${B + 2}.2`,
      }),
    ).toContain(IP);
    // DSHT: a member's round trip (the fleet key) is answered.
    const member = await new Attacker(`127.0.${B + 2}.3`, [KEY]).bind();
    try {
      expect(await member.roundTrip({ ip: IP, port: ports.dsht })).toBe(true);
    } finally {
      member.close();
    }
    // Admin: health, readiness and metrics.
    expect((await fetch(`http://${IP}:${ports.admin}/healthz`)).status).toBe(200);
    expect((await fetch(`http://${IP}:${ports.admin}/readyz`)).status).toBe(200);

    expect(child.exitCode).toBeNull();
    expect(child.signalCode).toBeNull();
    expect(stderr).not.toMatch(/uncaught|EMFILE|Error/i);
    expect(stdout).not.toMatch(/"level":60/); // no fatal line
  });
});
