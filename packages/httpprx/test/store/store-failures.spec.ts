/**
 * Cache commits under descriptor exhaustion and a full disk (issue 31, bench:soak: cache commits
 * failed with EMFILE). The disk store's body files are opened and renamed through an injected
 * `BodyFiles` that fails the way the kernel does (EMFILE, ENFILE on open; ENOSPC on a write or a
 * rename); a real origin and a real proxy on loopback. The response reaches its client whole,
 * unstored; the failure is counted and logged at most once per interval; nothing partial is
 * kept, before or after a restart; no exception escapes (vitest fails a run on one).
 */
import { mkdtempSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { STORE_ERROR_LOG_INTERVAL_MS } from '../../src/commit/commit.js';
import type { BodyFiles } from '../../src/store/disk-store.js';
import type { Logger, ProxyMetrics } from '../../src/proxy/types.js';
import { T0, get, startOrigin, startProxy, until } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const SMALL = Buffer.from('a small page\n'.repeat(100)); // held in memory until the commit
const LARGE = Buffer.alloc(300 * 1024, 7); // spilled to a temp file as it arrives

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const fsError = (code: string) =>
  Object.assign(new Error(`${code}: simulated`), { code, errno: -24, syscall: 'open' });

/** Real files, with a failure injected while `fault` says so. */
class FaultyFiles implements BodyFiles {
  fault: { on: 'open' | 'write' | 'rename'; code: string } | undefined;
  async open(path: string, flags: 'w' | 'w+'): Promise<FileHandle> {
    if (this.fault?.on === 'open') throw fsError(this.fault.code);
    const h = await open(path, flags);
    if (this.fault?.on !== 'write') return h;
    const code = this.fault.code;
    // The handle writes nothing: the disk is full.
    return new Proxy(h, {
      get(target, prop, receiver) {
        if (prop === 'write') return () => Promise.reject(fsError(code));
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
  async rename(from: string, to: string): Promise<void> {
    if (this.fault?.on === 'rename') throw fsError(this.fault.code);
    await rename(from, to);
  }
}

interface Setup {
  origin: Origin;
  px: ProxyHarness;
  files: FaultyFiles;
  failures: string[];
  warnings: unknown[];
  clock: ManualClock;
  dataDir: string;
}

async function setup(body: Buffer): Promise<Setup> {
  const origin = await startOrigin((_req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(body.length) });
    res.end(body);
  });
  cleanups.push(() => origin.close());
  const files = new FaultyFiles();
  const failures: string[] = [];
  const warnings: unknown[] = [];
  const metrics: ProxyMetrics = {
    request() {},
    originFetch() {},
    peerFetch() {},
    rateLimited() {},
    storeFailed: (code) => failures.push(code),
  };
  const logger: Logger = {
    debug() {},
    info() {},
    warn: (o, msg) => {
      if (msg?.startsWith('cache store failed')) warnings.push(o);
    },
    error() {},
  };
  const clock = new ManualClock(T0);
  const dataDir = mkdtempSync(join(tmpdir(), 'coral-emfile-'));
  const px = await startProxy({ dataDir }, { clock, metrics, logger, bodyFiles: files });
  cleanups.push(() => px.close());
  return { origin, px, files, failures, warnings, clock, dataDir };
}

const cases = [
  ['a small body, its file cannot be opened (EMFILE)', SMALL, 'open', 'EMFILE'],
  ['a small body, the system file table is full (ENFILE)', SMALL, 'open', 'ENFILE'],
  ['a small body, the disk is full (ENOSPC on write)', SMALL, 'write', 'ENOSPC'],
  ['a large body, its temp file cannot be opened (EMFILE)', LARGE, 'open', 'EMFILE'],
  ['a large body, the disk fills while it arrives (ENOSPC on write)', LARGE, 'write', 'ENOSPC'],
  ['a large body, the rename fails (ENOSPC)', LARGE, 'rename', 'ENOSPC'],
] as const;

describe('a cache commit that the disk refuses', () => {
  for (const [what, body, on, code] of cases) {
    it(`${what}: served whole, not stored, counted, nothing partial kept`, async () => {
      const s = await setup(body);
      s.files.fault = { on, code };
      const r = await get(s.px.port, s.origin.coralHost, '/page');
      expect(r.status).toBe(200);
      expect(r.body.equals(body)).toBe(true);
      expect(r.headers['cache-status']).not.toMatch(/stored/);
      await waitForCount(s, 1);
      expect(s.failures).toEqual([code]);
      expect(await s.px.proxy.cacheList()).toEqual([]);
      // Still failing: the next client is served from the origin again.
      const again = await get(s.px.port, s.origin.coralHost, '/page');
      expect(again.body.equals(body)).toBe(true);
      expect(s.origin.hits).toHaveLength(2);
      await waitForCount(s, 2);
      // The disk is back: the next fetch is stored, and only complete bodies survive a restart.
      s.files.fault = undefined;
      await get(s.px.port, s.origin.coralHost, '/page');
      await until(async () => (await s.px.proxy.cacheList()).length === 1);
      await s.px.close();
      const back = await startProxy({ dataDir: s.dataDir }, { clock: s.clock });
      cleanups.push(() => back.close());
      const [entry] = await back.proxy.cacheList();
      expect(entry?.size).toBe(body.length);
      const hit = await get(back.port, s.origin.coralHost, '/page');
      expect(hit.headers['cache-status']).toMatch(/^Coral; hit/);
      expect(hit.body.equals(body)).toBe(true);
    });
  }

  it('logs a failing disk at most once per interval, counting every failure', async () => {
    const s = await setup(SMALL);
    s.files.fault = { on: 'open', code: 'EMFILE' };
    for (let i = 0; i < 3; i++) await get(s.px.port, s.origin.coralHost, `/p${i}`);
    await waitForCount(s, 3);
    expect(s.warnings).toHaveLength(1);
    await s.clock.advance(STORE_ERROR_LOG_INTERVAL_MS);
    await get(s.px.port, s.origin.coralHost, '/p9');
    await waitForCount(s, 4);
    expect(s.warnings).toHaveLength(2);
    expect(s.warnings[1]).toMatchObject({ code: 'EMFILE', unlogged: 2 });
  });
});

function waitForCount(s: Setup, n: number): Promise<void> {
  return until(() => s.failures.length >= n, `${n} store failures`);
}
