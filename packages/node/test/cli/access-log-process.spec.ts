/**
 * The access log of a `coral-node start` process, as an operator runs it: combined lines in a
 * file that logrotate moves (SIGUSR1 reopens it by its path), and not one accepted line lost
 * when SIGTERM stops the node — even with its destination (a pipe here) far behind.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, existsSync, readFileSync, renameSync } from 'node:fs';
import { once } from 'node:events';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/cli/client.js';
import { CLI_PATH, SampleOrigin, fetchVia, stopProcess } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const origin = new SampleOrigin({ host: '127.0.0.1', objects: 4 });
let originPort = 0;
beforeAll(async () => {
  originPort = (await origin.listen()).port;
});
afterAll(() => origin.close());

// The combined log format as log tools parse it, with the quoted cache result appended.
const COMBINED =
  /^(\S+) (\S+) (\S+) \[([^\]]+)\] "([^"]*)" (\d{3}) (\d+|-) "([^"]*)" "([^"]*)" "([^"]*)"$/;

const lines = (path: string) =>
  existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];

/** A node process logging to `destination`; `burst(n, tag)` sends n requests through it. */
async function startNode(destination: string, dir: string, logLevel = 'warn') {
  const port = originPort;
  const ip = `127.0.${randomSubnet()}.41`;
  const child = spawn(process.execPath, [CLI_PATH, 'start'], {
    env: {
      PATH: process.env.PATH ?? '',
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_DATA_DIR: join(dir, 'data'),
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.origin.test=127.0.0.1',
      CORAL_LOG_LEVEL: logLevel,
      CORAL_LOG_ACCESS_FORMAT: 'combined',
      CORAL_LOG_ACCESS_DESTINATION: destination,
      CORAL_PROXY_CLIENT_RATE_LIMIT_PER_SECOND: '100000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const admin = new AdminClient({ url: `http://${ip}:8092`, timeoutMs: 2_000 });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const host = `www.origin.test.${port}.nyud.net`;
  await waitFor(
    async () => (await admin.json<{ ready: boolean }>('GET', '/readyz').catch(() => null))?.ready,
    60_000,
    'the node to be ready',
  );
  const burst = async (n: number, tag: string, pad = '') => {
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        fetchVia({ ip, port: 8090 }, host, `/obj/${i % 4}?${tag}=${i}`, {
          agent,
          // Quotes and a tab (node's client sends no newline in a field): escaped on the line.
          headers: { 'user-agent': `test "${tag}"\t${i}${pad}` },
        }),
      ),
    );
    expect(answers.every((r) => r.status === 200)).toBe(true);
  };
  const stop = async (): Promise<number | null> => {
    child.kill('SIGTERM');
    return new Promise((resolve) => child.once('exit', resolve));
  };
  const cleanup = async (c: ChildProcess = child) => {
    agent.destroy();
    if (c.exitCode === null) await stopProcess(c, 10_000);
  };
  return { child, burst, stop, cleanup, out: () => out };
}

/** Every line is a combined line whose User-Agent went through the escaping. */
function checkCombined(all: string[]) {
  for (const l of all) {
    const m = COMBINED.exec(l);
    expect(m, l).not.toBeNull();
    expect(m![9]).toMatch(/^test \\x22[a-z]+\\x22\\x09\d+x*$/);
  }
}

describe('coral-node start with log.access in a file', () => {
  it('reopens the file on SIGUSR1 after it was moved', async () => {
    const dir = tmpDir('access-process');
    const log = join(dir, 'access.log');
    const moved = join(dir, 'access.log.1');
    const node = await startNode(log, dir);
    try {
      await node.burst(200, 'before');
      await waitFor(() => lines(log).length === 200, 10_000, 'the first 200 lines');
      renameSync(log, moved); // logrotate's move
      node.child.kill('SIGUSR1');
      await waitFor(() => existsSync(log), 10_000, 'the reopened file');
      await node.burst(300, 'after');
      expect(await node.stop(), node.out()).toBe(0);
    } finally {
      await node.cleanup();
    }
    const old = lines(moved);
    const now = lines(log);
    expect(old).toHaveLength(200);
    expect(now).toHaveLength(300);
    checkCombined([...old, ...now]);
    expect(now.every((l) => l.includes('?after='))).toBe(true);
    expect(new Set(now.map((l) => COMBINED.exec(l)![5])).size).toBe(300);
  });

  it('writes every accepted line before exiting on SIGTERM, its destination far behind', async () => {
    const dir = tmpDir('access-fifo');
    const fifo = join(dir, 'access.pipe');
    execFileSync('mkfifo', [fifo]);
    // The reader of the pipe opens it and then reads nothing: the pipe (64 KiB) fills, and the
    // node's lines wait in its buffer.
    const reader = createReadStream(fifo);
    reader.pause();
    const closed = once(reader, 'close');
    const node = await startNode(fifo, dir, 'info');
    let text = '';
    try {
      // 600 lines of about 700 bytes: far more than the pipe (and the reader's buffer) hold.
      await node.burst(600, 'sigterm', 'x'.repeat(600));
      const exited = node.stop();
      // The destination catches up only once the node waits for it (or has exited without).
      await waitFor(
        () => node.out().includes('writing the access log out') || node.child.exitCode !== null,
        20_000,
        'the node to wait for its access log',
      );
      reader.on('data', (c: Buffer | string) => (text += c.toString()));
      reader.resume();
      expect(await exited, node.out()).toBe(0);
      await closed; // the node closed its end: every line it had is in
    } finally {
      reader.destroy();
      await node.cleanup();
    }
    const got = text.split('\n').filter(Boolean);
    expect(got).toHaveLength(600);
    checkCombined(got);
  });
});
