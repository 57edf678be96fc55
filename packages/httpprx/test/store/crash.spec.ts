/**
 * Crash safety: a real proxy process (the compiled dist entry) is SIGKILLed while it stores large
 * objects, at a different point each round. After every kill, before anything cleans up, every
 * metadata record must point at a complete file with the recorded size and SHA-256; after every
 * restart, every object the proxy serves from its cache must be byte-identical to the origin's.
 * Each object is asked for twice at once, so one client joins the fetch in flight and reads the
 * body back through the disk (read-while-write) when the kill lands: what any client got by then
 * is a prefix of the origin's bytes.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Level } from 'level';
import { bodyPath } from '../../src/store/disk-store.js';
import { decodeMeta } from '../../src/store/meta-codec.js';
import { get, startOrigin, until } from '../helpers/harness.js';
import type { Origin } from '../helpers/harness.js';

const ROOT = resolve(fileURLToPath(new URL('../../../..', import.meta.url)));
const ENTRY = join(ROOT, 'packages/httpprx/dist/bin/proxy-process.js');
const OBJECTS = 6;
const ROUNDS = 4;

function objectBody(i: number): Buffer {
  const size = (2 + i) * 1024 * 1024 + i * 777; // 2 MiB .. 7 MiB
  const b = Buffer.alloc(size);
  let x = 0x9e3779b9 ^ (i + 1);
  for (let j = 0; j < size; j += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b.writeUInt32LE(x >>> 0, Math.min(j, size - 4));
  }
  return b;
}

const bodies = Array.from({ length: OBJECTS }, (_, i) => objectBody(i));
let origin: Origin;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/httpprx'],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
  origin = await startOrigin((req, res) => {
    const i = Number((req.url ?? '').split('/')[2]);
    const body = bodies[i];
    if (!body) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-length': String(body.length), 'cache-control': 'max-age=86400' });
    // Send in 64 KiB slices, yielding between them, so a kill lands mid-transfer.
    let off = 0;
    const more = () => {
      if (res.destroyed) return;
      if (off >= body.length) return void res.end();
      const next = body.subarray(off, off + 65536);
      off += next.length;
      if (res.write(next)) setImmediate(more);
      else res.once('drain', more);
    };
    more();
  });
}, 120_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await origin?.close();
});

function startChild(dataDir: string): Promise<{ child: ChildProcess; port: number }> {
  const config = {
    dataDir,
    allowPrivateOrigins: true,
    hosts: { 'origin.test': ['127.0.0.2'] },
    rateLimit: { perSecond: 0 },
    memoryBudgetBytes: 8 * 1024 * 1024,
  };
  const child = spawn(process.execPath, [ENTRY, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return new Promise((resolveP, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line)
        resolveP({ child, port: (JSON.parse(line) as { port: number }).port });
    });
    child.on('exit', (code) => reject(new Error(`proxy exited early with ${code}`)));
  });
}

/** Metadata as the killed process left it, checked against the files before any cleanup runs. */
async function checkMetadata(dataDir: string): Promise<number> {
  const db = new Level<Uint8Array, Uint8Array>(join(dataDir, 'meta'), {
    keyEncoding: 'view',
    valueEncoding: 'view',
  });
  await db.open();
  let n = 0;
  try {
    for await (const [key, value] of db.iterator()) {
      const meta = decodeMeta(key, value)!;
      expect(meta).toBeDefined();
      const file = join(dataDir, bodyPath(meta.file!));
      const st = await stat(file);
      expect(st.size).toBe(meta.size);
      const sha = createHash('sha256')
        .update(await readFile(file))
        .digest('hex');
      expect(sha).toBe(meta.sha256);
      const i = Number(new URL(meta.url).pathname.split('/')[2]);
      expect(meta.size).toBe(bodies[i]!.length);
      n++;
    }
  } finally {
    await db.close();
  }
  return n;
}

describe('crash safety of the disk store (real process, SIGKILL)', () => {
  it(`survives ${ROUNDS} kills at different moments while storing`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'coral-crash-'));
    const host = `origin.test.${origin.port}.nyud.net`;
    let everServed = 0;
    let killedMidWrite = 0;
    let joinedReaders = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const { child, port } = await startChild(dataDir);
      // 1. Whatever it serves from its cache is byte-identical to the origin's.
      for (let i = 0; i < OBJECTS; i++) {
        const r = await get(port, host, `/obj/${i}`, { 'cache-control': 'only-if-cached' });
        if (r.status === 200) {
          expect(r.body.equals(bodies[i]!)).toBe(true);
          everServed++;
        } else expect(r.status).toBe(504);
      }
      // 2. Store one more object for sure (so later rounds have complete objects to serve)...
      expect((await get(port, host, `/obj/${round}`)).body.equals(bodies[round]!)).toBe(true);
      const cached = async () =>
        (await get(port, host, `/obj/${round}`, { 'cache-control': 'only-if-cached' })).status ===
        200;
      await until(cached, 'the object stored', 30_000);
      // ...then fetch everything at once and kill it once this much has gone by (a different
      // moment each round: mid-transfer for some objects, during commit or just after for others).
      const killAt = (round + 1) * 4 * 1024 * 1024 + round * 333_333;
      let received = 0;
      // Two clients per object: the second joins the fetch in flight and reads the body through
      // the disk (read-while-write) while the first reads it too. Whatever either got before the
      // kill must be a prefix of the origin's bytes.
      const got: Array<{ i: number; chunks: Buffer[]; joined: boolean }> = [];
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      await new Promise<void>((resolveP) => {
        for (let n = 0; n < 2 * OBJECTS; n++) {
          const i = n % OBJECTS;
          const req = request(
            { host: '127.0.0.1', port, path: `/obj/${i}`, headers: { host }, agent: false },
            (res) => {
              const mine = {
                i,
                chunks: [] as Buffer[],
                joined: /collapsed/.test(String(res.headers['cache-status'])),
              };
              got.push(mine);
              res.on('data', (c: Buffer) => {
                mine.chunks.push(c);
                received += c.length;
                if (received >= killAt && child.exitCode === null && !child.killed) {
                  child.kill('SIGKILL');
                  resolveP();
                }
              });
              res.on('error', () => {});
              res.on('end', () => {});
            },
          );
          req.on('error', () => {});
          req.end();
        }
        child.once('exit', () => resolveP());
      });
      await exited;
      for (const g of got) {
        const b = Buffer.concat(g.chunks);
        expect(b.equals(bodies[g.i]!.subarray(0, b.length))).toBe(true);
      }
      joinedReaders += got.filter((g) => g.joined).length;
      // 3. No record points at a missing, short or wrong file.
      expect(await checkMetadata(dataDir)).toBeGreaterThanOrEqual(round + 1);
      // The kill did land mid-store: partial bodies were left in tmp/ (removed on the next start).
      if ((await readdir(join(dataDir, 'tmp'))).length > 0) killedMidWrite++;
    }
    // A last clean start: it fetches what is missing, and everything is served whole.
    const { child, port } = await startChild(dataDir);
    for (let i = 0; i < OBJECTS; i++) {
      const r = await get(port, host, `/obj/${i}`);
      expect(r.body.equals(bodies[i]!)).toBe(true);
    }
    for (let i = 0; i < OBJECTS; i++) {
      const r = await get(port, host, `/obj/${i}`, { 'cache-control': 'only-if-cached' });
      expect(r.status).toBe(200);
      expect(r.body.equals(bodies[i]!)).toBe(true);
    }
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    await exited;
    expect(await checkMetadata(dataDir)).toBe(OBJECTS);
    expect(everServed).toBeGreaterThan(0);
    expect(killedMidWrite).toBeGreaterThan(0);
    expect(joinedReaders).toBeGreaterThan(0);
    expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
  }, 120_000);
});
