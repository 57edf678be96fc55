/**
 * Five DSHT nodes as separate processes over real UDP on 127.0.0.2-6 (loopback only), driven through
 * the dsht-node control protocol (JSON lines on stdin/stdout). Needs the `tsc -b` output, which the
 * test command builds first (built here if missing).
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Keyring } from '@coral/keyring';
import { waitFor } from '@coral/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const bin = join(root, 'packages/sim/dist/bin/dsht-node.js');

interface Proc {
  child: ChildProcessWithoutNullStreams;
  ready: { id: string; ip: string; port: number; routes: number };
  call(op: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Unsolicited lines (`{"event": ...}`) after ready. */
  events: Array<Record<string, unknown>>;
}

const procs = new Set<ChildProcessWithoutNullStreams>();
const dataRoot = mkdtempSync(join(tmpdir(), 'dsht-mp-'));

function launch(
  ip: string,
  port: number,
  data: string,
  bootstrap: string[] = [],
  opts: { keys?: string[]; args?: string[] } = {},
): Promise<Proc> {
  const env = { ...process.env };
  delete env.CORAL_FLEET_KEYS;
  if (opts.keys) env.CORAL_FLEET_KEYS = opts.keys.join(',');
  const child = spawn(
    process.execPath,
    [
      bin,
      '--host',
      ip,
      '--port',
      String(port),
      '--data',
      data,
      '--bootstrap',
      bootstrap.join(','),
      ...(opts.args ?? []),
    ],
    { stdio: ['pipe', 'pipe', 'pipe'], env },
  );
  procs.add(child);
  child.on('exit', () => procs.delete(child));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const waiting = new Map<number, (v: Record<string, unknown>) => void>();
  const events: Array<Record<string, unknown>> = [];
  let nextId = 1;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`node ${ip} did not start: ${stderr}`)),
      20_000,
    );
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node ${ip} exited with ${code}: ${stderr}`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line) as Record<string, unknown>;
      if (msg.event === 'ready') {
        clearTimeout(timer);
        resolve({
          child,
          events,
          ready: msg as unknown as Proc['ready'],
          call: (op, args = {}) =>
            new Promise((res) => {
              const id = nextId++;
              waiting.set(id, res);
              child.stdin.write(JSON.stringify({ id, op, ...args }) + '\n');
            }),
        });
      } else if (typeof msg.id === 'number') {
        waiting.get(msg.id)?.(msg);
        waiting.delete(msg.id);
      } else if (msg.event) events.push(msg);
    });
  });
}

beforeAll(() => {
  if (!existsSync(bin))
    execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-b'], {
      cwd: root,
    });
});

afterAll(() => {
  for (const c of procs) c.kill('SIGKILL');
  rmSync(dataRoot, { recursive: true, force: true });
});

describe('multi-process fleet over UDP', () => {
  it('puts on one node, gets on the others; a SIGKILLed holder restarts from its data dir without bootstrap and still answers', async () => {
    const ips = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6'];
    const first = await launch(ips[0]!, 0, join(dataRoot, 'n0'));
    const boot = [`${first.ready.ip}:${first.ready.port}`];
    const nodes: Proc[] = [first];
    for (let i = 1; i < ips.length; i++)
      nodes.push(await launch(ips[i]!, 0, join(dataRoot, `n${i}`), boot));
    for (const n of nodes.slice(1)) expect(n.ready.routes).toBeGreaterThan(0);

    const put = await nodes[1]!.call('put', {
      key: 'url:http://example.com/',
      value: 'holder-1',
      ttl: 600,
    });
    expect(put.ok).toBe(true);
    const storedAt = (put.result as { stored: Array<{ ip: string; port: number }> }).stored[0]!;
    for (const n of nodes) {
      const r = await n.call('get', { key: 'url:http://example.com/' });
      expect(r.ok, JSON.stringify(r)).toBe(true);
      expect((r.result as { values: string[] }).values).toEqual(['holder-1']);
    }

    // Kill the node that stored the value, with no chance to clean up.
    const victimIndex = nodes.findIndex(
      (n) => n.ready.ip === storedAt.ip && n.ready.port === storedAt.port,
    );
    expect(victimIndex).toBeGreaterThanOrEqual(0);
    const victim = nodes[victimIndex]!;
    await victim.call('flush');
    const exited = new Promise((r) => victim.child.once('exit', r));
    victim.child.kill('SIGKILL');
    await exited;

    // Restart on the same address and data dir, no bootstrap address.
    const again = await launch(
      victim.ready.ip,
      victim.ready.port,
      join(dataRoot, `n${victimIndex}`),
    );
    expect(again.ready.id).toBe(victim.ready.id);
    expect(again.ready.routes).toBeGreaterThan(0);
    nodes[victimIndex] = again;
    const local = await again.call('localGet', { key: 'url:http://example.com/' });
    expect((local.result as { values: string[] }).values).toEqual(['holder-1']);
    // It rejoined: the others reach it, and the value is still found. (A sloppy put may store the
    // value at more than one node on the path, and the gets above cache it along their paths, so
    // the get may be answered by any node that holds a copy now.)
    const holders: string[] = [];
    for (const n of nodes) {
      const held = await n.call('localGet', { key: 'url:http://example.com/' });
      if ((held.result as { values: string[] }).values.includes('holder-1'))
        holders.push(n.ready.ip);
    }
    expect(holders).toContain(victim.ready.ip);
    const asker = nodes[(victimIndex + 1) % nodes.length]!;
    const r = await asker.call('get', { key: 'url:http://example.com/' });
    expect((r.result as { values: string[] }).values).toEqual(['holder-1']);
    expect(holders).toContain((r.result as { answeredBy: { ip: string } }).answeredBy.ip);
    // It answers a ping. (A ping's attempts wait 250 ms or more each; a process started a moment
    // ago on a loaded machine can miss all three, so the asker tries again.)
    let ping: Record<string, unknown> = {};
    await waitFor(
      async () => {
        ping = await asker.call('ping', { address: `${victim.ready.ip}:${victim.ready.port}` });
        return ping.ok === true;
      },
      { what: 'the restarted node to answer a ping', everyMs: 200, limitMs: 20_000 },
    );
    expect(ping.ok, JSON.stringify(ping)).toBe(true);
    const routes = await again.call('routes');
    expect((routes.result as { contacts: string[] }).contacts.length).toBe(4);

    for (const n of nodes) await n.call('stop');
  });
});

describe('key rotation across processes over UDP (keyed mode)', () => {
  it('installs B, uses B, removes A on five nodes with gets succeeding throughout; a node left on A says it is isolated', async () => {
    const A = Keyring.generateKey();
    const B = Keyring.generateKey();
    const idA = Keyring.keyId(A);
    const idB = Keyring.keyId(B);
    const ips = ['127.18.0.2', '127.18.0.3', '127.18.0.4', '127.18.0.5', '127.18.0.6'];
    const opts = { keys: [A], args: ['--isolation-ms', '1000'] };
    const first = await launch(ips[0]!, 0, join(dataRoot, 'k0'), [], opts);
    const boot = [`${first.ready.ip}:${first.ready.port}`];
    const fleet: Proc[] = [first];
    for (let i = 1; i < ips.length; i++)
      fleet.push(await launch(ips[i]!, 0, join(dataRoot, `k${i}`), boot, opts));
    const laggard = await launch('127.18.0.7', 0, join(dataRoot, 'k5'), boot, opts);
    const keys = ['url:http://a.example/', 'url:http://b.example/', 'url:http://c.example/'];
    for (const [i, key] of keys.entries()) {
      const put = await fleet[i]!.call('put', { key, value: `v${i}`, ttl: 600 });
      expect(put.ok, JSON.stringify(put)).toBe(true);
    }
    // Values whose only copy is on the laggard leave with it; the others must stay reachable.
    const held = async (key: string) =>
      ((await laggard.call('localGet', { key })).result as { values: string[] }).values.length;
    const reachable: string[] = [];
    for (const key of keys) if ((await held(key)) === 0) reachable.push(key);
    expect(reachable.length).toBeGreaterThan(0);
    const getsSucceed = async (step: string) => {
      for (const n of fleet)
        for (const [i, key] of keys.entries()) {
          if (!reachable.includes(key)) continue;
          const r = await n.call('get', { key });
          expect((r.result as { values: string[] }).values, `${step}: ${n.ready.ip}`).toEqual([
            `v${i}`,
          ]);
        }
    };
    await getsSucceed('before');
    for (const [step, op, args] of [
      ['install B', 'keyInstall', { key: B }],
      ['use B', 'keyUse', { keyId: idB }],
      ['remove A', 'keyRemove', { keyId: idA }],
    ] as const) {
      for (const n of fleet) {
        const r = await n.call(op, args);
        expect(r.ok, JSON.stringify(r)).toBe(true);
      }
      await getsSucceed(step);
    }
    const keysNow = await fleet[0]!.call('keys');
    expect(keysNow.result).toEqual({ keys: [{ id: idB, primary: true }] });
    // The fleet keeps reaching out to the laggard under B; it authenticates none of it.
    const address = `${laggard.ready.ip}:${laggard.ready.port}`;
    await waitFor(
      async () => {
        void fleet[0]!.call('ping', { address, retries: 0 });
        const s = (await laggard.call('authState')).result as { isolated: boolean };
        return s.isolated;
      },
      { what: 'the laggard to report isolation', everyMs: 200, limitMs: 20_000 },
    );
    const state = (await laggard.call('authState')).result as {
      reason: string;
      unknownKeyIds: string[];
    };
    expect(state.unknownKeyIds).toContain(idB);
    expect(state.reason).toContain(idB);
    const event = laggard.events.find((e) => e.event === 'isolated');
    expect(event).toMatchObject({ isolated: true });
    expect(String(event!.reason)).toContain(idB);
    for (const n of [...fleet, laggard]) await n.call('stop');
  });
});
