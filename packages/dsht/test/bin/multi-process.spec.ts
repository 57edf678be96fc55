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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const bin = join(root, 'packages/dsht/dist/bin/dsht-node.js');

interface Proc {
  child: ChildProcessWithoutNullStreams;
  ready: { id: string; ip: string; port: number; routes: number };
  call(op: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
}

const procs = new Set<ChildProcessWithoutNullStreams>();
const dataRoot = mkdtempSync(join(tmpdir(), 'dsht-mp-'));

function launch(ip: string, port: number, data: string, bootstrap: string[] = []): Promise<Proc> {
  const child = spawn(
    process.execPath,
    [bin, '--host', ip, '--port', String(port), '--data', data, '--bootstrap', bootstrap.join(',')],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  procs.add(child);
  child.on('exit', () => procs.delete(child));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const waiting = new Map<number, (v: Record<string, unknown>) => void>();
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
      }
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
    // It rejoined: the others reach it, and it answers for the value.
    const asker = nodes[(victimIndex + 1) % nodes.length]!;
    const r = await asker.call('get', { key: 'url:http://example.com/' });
    expect((r.result as { values: string[] }).values).toEqual(['holder-1']);
    expect((r.result as { answeredBy: { ip: string } }).answeredBy.ip).toBe(victim.ready.ip);
    const routes = await again.call('routes');
    expect((routes.result as { contacts: string[] }).contacts.length).toBe(4);

    for (const n of nodes) await n.call('stop');
  });
});
