/**
 * Compression stored once (issue 27, Must-show 2), over real sockets: one origin fetch, one stored
 * gzip representation, and each client the coding it accepts — the same bytes after decoding.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { ManualClock } from '@coral/testkit';
import { InMemoryContentIndex } from '../../src/memory-index.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { T0, closer, get, startOrigin, startProxy, until } from '../helpers/harness.js';
import { urlKey } from '../../src/mapping/coral-name.js';
import type { Origin, ProxyHarness, Reply } from '../helpers/harness.js';
import type { ProxyOptions } from '../../src/proxy/types.js';
import { normalizeAcceptEncoding, chooseCoding } from '../../src/kit/encoding.js';

const BODY = Buffer.from(
  Array.from(
    { length: 800 },
    (_, i) => `<p class="row-${i % 17}">line ${i} of the page</p>\n`,
  ).join(''),
);

let origin: Origin | undefined;
let px: ProxyHarness | undefined;

afterEach(async () => {
  await px?.close();
  await origin?.close();
  px = undefined;
  origin = undefined;
});

async function setup(
  headers: Record<string, string> = {},
  options: Partial<ProxyOptions> = {},
  body = BODY,
) {
  origin = await startOrigin((_req, res) => {
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'max-age=600',
      etag: '"v1"',
      'content-length': String(body.length),
      ...headers,
    });
    res.end(body);
  });
  px = await startProxy(options);
  return { o: origin, p: px };
}

/** The miss's commit (and its compression) follows the response: wait until it is stored. */
async function stored(p: ProxyHarness, n = 1): Promise<void> {
  await until(async () => (await p.proxy.cacheList()).length === n, 'stored');
}

function decode(r: Reply): Buffer {
  const ce = r.headers['content-encoding'];
  if (ce === 'gzip') return zlib.gunzipSync(r.body);
  if (ce === 'br') return zlib.brotliDecompressSync(r.body);
  if (ce === 'zstd') return zlib.zstdDecompressSync(r.body);
  expect(ce).toBeUndefined();
  return r.body;
}

describe('compression stored once', () => {
  it('gzip, br, zstd and identity clients get the same bytes after decoding, one origin fetch', async () => {
    const { o, p } = await setup();
    const host = o.coralHost;
    // The miss stores the gzip form at commit.
    const miss = await get(p.port, host, '/page', { 'accept-encoding': 'gzip' });
    expect(miss.body.equals(BODY)).toBe(true);
    await stored(p);
    const cases: [Record<string, string>, string | undefined][] = [
      [{ 'accept-encoding': 'gzip, deflate, br, zstd' }, 'gzip'],
      [{ 'accept-encoding': 'br' }, 'br'],
      [{ 'accept-encoding': 'zstd' }, 'zstd'],
      [{ 'accept-encoding': 'br;q=1, gzip;q=0.5' }, 'br'],
      [{ 'accept-encoding': 'identity' }, undefined],
      [{}, undefined], // no Accept-Encoding: identity (curl, scripts)
      [{ 'accept-encoding': 'deflate' }, undefined],
    ];
    for (const [h, ce] of cases) {
      const r = await get(p.port, host, '/page', h);
      expect(r.status).toBe(200);
      expect(r.headers['content-encoding']).toBe(ce);
      expect(r.headers['vary']).toMatch(/accept-encoding/i);
      expect(r.headers['coral-coded']).toBeUndefined();
      expect(decode(r).equals(BODY)).toBe(true);
      if (ce === 'gzip') {
        expect(Number(r.headers['content-length'])).toBe(r.body.length);
        expect(r.body.length).toBeLessThan(BODY.length / 2);
        expect(r.headers['etag']).toBe('W/"v1"'); // a transformed form's ETag is weak
      }
      if (ce === undefined) {
        expect(Number(r.headers['content-length'])).toBe(BODY.length);
        expect(r.headers['etag']).toBe('"v1"');
      }
      if (ce === 'br' || ce === 'zstd') expect(r.headers['content-length']).toBeUndefined();
    }
    expect(o.hits).toHaveLength(1);
    // One stored representation, the gzip one.
    const list = await p.proxy.cacheList();
    expect(list).toHaveLength(1);
    expect(list[0]!.size).toBeLessThan(BODY.length / 2);
    // HEAD carries the length of the form it stands for.
    const head = await get(p.port, host, '/page', { 'accept-encoding': 'gzip' }, 'HEAD');
    expect(Number(head.headers['content-length'])).toBe(list[0]!.size);
  });

  it('Cache-Control: no-transform is never transformed', async () => {
    const { o, p } = await setup({ 'cache-control': 'max-age=600, no-transform' });
    await get(p.port, o.coralHost, '/nt', { 'accept-encoding': 'gzip' });
    await stored(p);
    const r = await get(p.port, o.coralHost, '/nt', { 'accept-encoding': 'gzip' });
    expect(r.headers['cache-status']).toMatch(/hit/);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.headers['etag']).toBe('"v1"');
    expect(r.body.equals(BODY)).toBe(true);
  });

  it('an existing Content-Encoding, a small body and an image are left alone', async () => {
    const gz = zlib.gzipSync(BODY);
    const { o, p } = await setup({ 'content-encoding': 'gzip', vary: 'Accept-Encoding' }, {}, gz);
    await get(p.port, o.coralHost, '/pre', { 'accept-encoding': 'gzip' });
    await stored(p);
    const r = await get(p.port, o.coralHost, '/pre', { 'accept-encoding': 'gzip, br' });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.body.equals(gz)).toBe(true);
    expect(r.headers['etag']).toBe('"v1"');
  });

  it('Vary: Accept-Encoding collapses to the normalised variants', async () => {
    let n = 0;
    origin = await startOrigin((req, res) => {
      n++;
      res.writeHead(200, {
        'content-type': 'text/plain',
        'cache-control': 'max-age=600',
        vary: 'Accept-Encoding',
      });
      res.end(`for ${req.headers['accept-encoding'] ?? '-'}`);
    });
    px = await startProxy();
    const browsers = [
      'gzip, deflate, br, zstd', // Chrome
      'gzip, deflate, br, zstd', // twice
      'gzip,deflate,br,zstd',
      'br, gzip, deflate, zstd',
      'GZIP, Deflate, BR, zstd',
      'deflate, gzip;q=1.0, br, zstd, identity',
    ];
    const bodies = new Set<string>();
    for (const ae of browsers) {
      const r = await get(px.port, origin.coralHost, '/v', { 'accept-encoding': ae });
      bodies.add(r.body.toString());
    }
    // Every one is the same normalised value: one origin fetch, the origin saw it normalised.
    expect(n).toBe(1);
    expect([...bodies]).toEqual(['for gzip, zstd, br']);
    await get(px.port, origin.coralHost, '/v', { 'accept-encoding': 'gzip' });
    await get(px.port, origin.coralHost, '/v', { 'accept-encoding': 'x-gzip, deflate' });
    await get(px.port, origin.coralHost, '/v', {});
    expect(n).toBe(3); // "gzip" and absent: two more variants, not four
  });

  it('a range of a compressible object is a range of its identity form, If-Range and conditionals work', async () => {
    const { o, p } = await setup();
    await get(p.port, o.coralHost, '/r', { 'accept-encoding': 'gzip' });
    await stored(p);
    const r = await get(p.port, o.coralHost, '/r', {
      'accept-encoding': 'gzip, br',
      range: 'bytes=100-1099',
      'if-range': '"v1"',
    });
    expect(r.status).toBe(206);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.headers['content-range']).toBe(`bytes 100-1099/${BODY.length}`);
    expect(r.body.equals(BODY.subarray(100, 1100))).toBe(true);
    const suffix = await get(p.port, o.coralHost, '/r', { range: 'bytes=-10' });
    expect(suffix.body.equals(BODY.subarray(BODY.length - 10))).toBe(true);
    const beyond = await get(p.port, o.coralHost, '/r', { range: `bytes=${BODY.length}-` });
    expect(beyond.status).toBe(416);
    // The coded form's weak ETag answers If-None-Match (weak comparison), and so does the strong one.
    for (const inm of ['W/"v1"', '"v1"']) {
      const c = await get(p.port, o.coralHost, '/r', {
        'accept-encoding': 'gzip',
        'if-none-match': inm,
      });
      expect(c.status).toBe(304);
      expect(c.headers['etag']).toBe('W/"v1"');
    }
    expect(o.hits).toHaveLength(1);
  });

  it('compress: false stores and serves what the origin sent', async () => {
    const { o, p } = await setup({}, { compress: false });
    await get(p.port, o.coralHost, '/off', { 'accept-encoding': 'gzip' });
    await stored(p);
    const r = await get(p.port, o.coralHost, '/off', { 'accept-encoding': 'gzip' });
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.body.equals(BODY)).toBe(true);
    expect((await p.proxy.cacheList())[0]!.size).toBe(BODY.length);
  });

  it('works from the disk store (streamed, not hot)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coral-compress-'));
    try {
      const { o, p } = await setup({}, { dataDir: dir, hotObjectMaxBytes: 0 });
      await get(p.port, o.coralHost, '/d', { 'accept-encoding': 'gzip' });
      await stored(p);
      for (const ae of ['gzip', 'identity', 'zstd']) {
        const r = await get(p.port, o.coralHost, '/d', { 'accept-encoding': ae });
        expect(decode(r).equals(BODY)).toBe(true);
      }
      const r = await get(p.port, o.coralHost, '/d', { range: 'bytes=5000-' });
      expect(r.body.equals(BODY.subarray(5000))).toBe(true);
      expect(o.hits).toHaveLength(1);
      await p.close();
      px = undefined;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('Accept-Encoding', () => {
  it('normalises to the served codings, most wanted first', () => {
    expect(normalizeAcceptEncoding(undefined)).toBeUndefined();
    expect(normalizeAcceptEncoding('gzip, deflate, br, zstd')).toBe('gzip, zstd, br');
    expect(normalizeAcceptEncoding('br;q=1, gzip;q=0.8')).toBe('br, gzip;q=0.8');
    expect(normalizeAcceptEncoding('br, gzip;q=0.8')).toBe('br, gzip;q=0.8'); // idempotent
    expect(normalizeAcceptEncoding('deflate, gzip, *;q=0.5')).toBe('gzip, zstd;q=0.5, br;q=0.5');
    expect(normalizeAcceptEncoding('deflate')).toBe('identity');
    expect(normalizeAcceptEncoding('gzip;q=0, identity')).toBe('identity');
    expect(normalizeAcceptEncoding('br, identity;q=0')).toBe('br, identity;q=0');
    expect(normalizeAcceptEncoding('*;q=0')).toBe('identity;q=0');
  });
  it('chooses by q-value, gzip at a tie, identity when nothing else is acceptable', () => {
    expect(chooseCoding(undefined)).toBe('identity');
    expect(chooseCoding('gzip, zstd, br')).toBe('gzip');
    expect(chooseCoding('br, gzip;q=0.5')).toBe('br');
    expect(chooseCoding('identity')).toBe('identity');
    expect(chooseCoding('gzip;q=0')).toBe('identity');
    expect(chooseCoding('identity;q=0')).toBe('identity');
  });
});

/** A keyed fleet's shared parts, and the origin serving BODY as text/html. */
async function keyedFleet() {
  const clock = new ManualClock(T0);
  const index = new InMemoryContentIndex({ clock });
  const members = new InMemoryFleetMembers({ recordsAuthenticated: true });
  origin = await startOrigin((_q, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'max-age=600' });
    res.end(BODY);
  });
  return { clock, index, members, o: origin };
}

describe('compression in the fleet', () => {
  it('a member sends its coded copy as stored; the node checks it, decodes it for an identity client, one origin fetch', async () => {
    const { clock, index, members, o } = await keyedFleet();
    const a = await startProxy(
      { self: { nodeId: 'aa'.repeat(20), ip: '127.0.0.1', httpPort: 0 } },
      { clock, index, members },
      '127.0.0.1',
    );
    const b = await startProxy(
      { self: { nodeId: 'bb'.repeat(20), ip: '127.0.0.4', httpPort: 0 } },
      { clock, index, members },
      '127.0.0.4',
    );
    try {
      members.set('aa'.repeat(20), { ip: '127.0.0.1', httpPort: a.port });
      members.set('bb'.repeat(20), { ip: '127.0.0.4', httpPort: b.port });
      const host = o.coralHost;
      await get(a.port, host, '/f', { 'accept-encoding': 'gzip' });
      await stored(a);
      const coded = (await a.proxy.cacheList())[0]!;
      expect(coded.size).toBeLessThan(BODY.length / 2);
      // B's identity client: the member's coded bytes, decoded on the way out.
      const viaPeer = await get(b.port, host, '/f', {}, 'GET', '127.0.0.4');
      expect(viaPeer.headers['cache-status']).toMatch(/fwd=peer/);
      expect(viaPeer.headers['content-encoding']).toBeUndefined();
      expect(viaPeer.headers['coral-coded']).toBeUndefined();
      expect(viaPeer.body.equals(BODY)).toBe(true);
      await stored(b);
      // B stored the same coded bytes (the record's hash), and serves every coding from them.
      expect((await b.proxy.cacheList())[0]!.sha256).toBe(coded.sha256);
      for (const ae of ['gzip', 'br', 'identity']) {
        const r = await get(b.port, host, '/f', { 'accept-encoding': ae }, 'GET', '127.0.0.4');
        expect(r.headers['cache-status']).toMatch(/hit/);
        expect(decode(r).equals(BODY)).toBe(true);
      }
      expect(o.hits).toHaveLength(1);
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe('a coded copy that lies about its identity form', () => {
  it('is not stored: its gzip bytes match the record, its declared identity hash does not', async () => {
    const { clock, index, members, o } = await keyedFleet();
    // Other bytes than the origin's, gzipped, declared as the origin's identity form.
    const forged = zlib.gzipSync(Buffer.concat([BODY, Buffer.from('<script>evil()</script>')]));
    const forgedSha = createHash('sha256').update(forged).digest('hex');
    const claimed = createHash('sha256').update(BODY).digest('hex');
    const liar = createServer((_req, res) => {
      res.writeHead(200, {
        'content-type': 'text/html',
        'cache-control': 'max-age=600',
        'content-encoding': 'gzip',
        'coral-coded': `gzip; length=${BODY.length}; sha256=${claimed}`,
        'content-length': String(forged.length),
      });
      res.end(forged);
    });
    const closeLiar = closer(liar);
    await new Promise<void>((r) => liar.listen(0, '127.0.0.5', r));
    const liarPort = (liar.address() as AddressInfo).port;
    const events: unknown[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (o: unknown, msg?: string) => events.push([o, msg]),
      error() {},
    };
    const b = await startProxy(
      { self: { nodeId: 'bb'.repeat(20), ip: '127.0.0.4', httpPort: 0 } },
      { clock, index, members, logger },
      '127.0.0.4',
    );
    try {
      members.set('cc'.repeat(20), { ip: '127.0.0.5', httpPort: liarPort });
      members.set('bb'.repeat(20), { ip: '127.0.0.4', httpPort: b.port });
      const url = `http://origin.test:${o.port}/l`;
      index.set(urlKey(url), {
        nodeId: 'cc'.repeat(20),
        ip: '127.0.0.5',
        httpPort: liarPort,
        state: 'complete',
        size: forged.length,
        sha256: forgedSha,
      });
      // An identity client of the copy in flight: decoded as it comes, so sent chunked — the
      // declared identity length is not trusted before the commit checks it.
      const r = await get(b.port, o.coralHost, '/l', {}, 'GET', '127.0.0.4');
      expect(r.headers['content-length']).toBeUndefined();
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(r.body.length).toBeGreaterThan(BODY.length);
      // The commit (after the response) decodes the copy once, and refuses it.
      await until(
        () => JSON.stringify(events).includes('a coded copy whose identity form does not match'),
        'refused',
      );
      expect(await b.proxy.cacheList()).toEqual([]);
    } finally {
      await b.close();
      await closeLiar();
    }
  });
});
