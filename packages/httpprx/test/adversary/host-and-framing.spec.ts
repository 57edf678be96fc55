/**
 * Adversary: ambiguous Host (duplicate, conflicting, missing on HTTP/1.1) and malformed messages,
 * over real TCP on loopback. A proxy that picks one of two Host values, or keeps reading a
 * connection after a framing error, lets a client aim requests at another authority or smuggle a
 * second request past checks. Each gets a 400 (408/431/405 where those apply) with
 * `Connection: close`, and nothing reaches the attacker's listener.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';
import type { ProxyMetrics } from '../../src/proxy/types.js';
import { rawExchange, rawRequest, startTrap } from './attacker.js';
import type { Trap } from './attacker.js';

const SITE = 'www.school.test';
let trap: Trap;
let origin: Origin;
let proxy: ProxyHarness;
const clientErrors: string[] = [];
const metrics: ProxyMetrics = {
  request() {},
  originFetch() {},
  peerFetch() {},
  rateLimited() {},
  clientError: (code) => clientErrors.push(code),
};

beforeAll(async () => {
  trap = await startTrap('127.0.0.66');
  origin = await startOrigin((req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': '11' });
    res.end('origin body');
  });
  proxy = await startProxy(
    {
      sites: { [SITE]: `http://origin.test:${origin.port}`, 'trap.test': `http://trap.test:1` },
      allowPrivateOrigins: true,
      hosts: { 'origin.test': ['127.0.0.2'], 'trap.test': ['127.0.0.66'] },
    },
    { metrics },
  );
});

afterAll(async () => {
  await proxy.close();
  await origin.close();
  await trap.close();
});

async function refused(raw: string, status: number, code: string): Promise<void> {
  const r = await rawRequest(proxy.port, raw);
  expect(r.status, raw).toBe(status);
  expect(r.headers['x-coral-error'], raw).toBe(code);
  expect(r.headers['connection'], raw).toBe('close');
  expect(r.body.toString()).toContain(code);
  await r.closed;
}

describe('Host (RFC 9112 §3.2)', () => {
  it('duplicate Host: 400 CORAL_BAD_HOST, whether the values agree or conflict', async () => {
    const other = `127.0.0.66:${trap.port}`;
    await refused(
      `GET /x HTTP/1.1\r\nHost: ${SITE}\r\nHost: ${other}\r\n\r\n`,
      400,
      'CORAL_BAD_HOST',
    );
    await refused(
      `GET /x HTTP/1.1\r\nHost: ${other}\r\nHost: ${SITE}\r\n\r\n`,
      400,
      'CORAL_BAD_HOST',
    );
    await refused(
      `GET /x HTTP/1.1\r\nHost: ${SITE}\r\nhost: ${SITE}\r\n\r\n`,
      400,
      'CORAL_BAD_HOST',
    );
    await refused(
      `GET /x HTTP/1.1\r\nHost: ${SITE}\r\nHost: trap.test\r\n\r\n`,
      400,
      'CORAL_BAD_HOST',
    );
    await refused(`GET /x HTTP/1.1\r\nHost: ${SITE}, trap.test\r\n\r\n`, 400, 'CORAL_BAD_HOST');
    expect(trap.connections).toEqual([]);
  });

  it('duplicate Host is refused on the hot-object fast path too', async () => {
    const ok = await rawRequest(proxy.port, `GET /hot HTTP/1.1\r\nHost: ${SITE}\r\n\r\n`);
    expect(ok.status).toBe(200);
    const hit = await rawRequest(proxy.port, `GET /hot HTTP/1.1\r\nHost: ${SITE}\r\n\r\n`);
    expect(hit.headers['cache-status']).toMatch(/^Coral; hit/);
    await refused(
      `GET /hot HTTP/1.1\r\nHost: ${SITE}\r\nHost: trap.test\r\n\r\n`,
      400,
      'CORAL_BAD_HOST',
    );
  });

  it('missing Host on HTTP/1.1, and an empty Host: 400 CORAL_BAD_HOST', async () => {
    await refused('GET /x HTTP/1.1\r\n\r\n', 400, 'CORAL_BAD_HOST');
    await refused('GET /x HTTP/1.1\r\nHost:\r\n\r\n', 400, 'CORAL_BAD_HOST');
    await refused(`GET http://${SITE}/x HTTP/1.1\r\n\r\n`, 400, 'CORAL_BAD_HOST');
  });

  it('HTTP/1.0 without Host may name the authority in absolute-form; origin-form cannot be routed', async () => {
    const r = await rawRequest(proxy.port, `GET http://${SITE}/ten HTTP/1.0\r\n\r\n`);
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('origin body');
    await refused('GET /ten HTTP/1.0\r\n\r\n', 400, 'CORAL_BAD_HOST');
  });
});

describe('malformed messages (the parser refuses them: clientError)', () => {
  it('a bad request line, bad header, CL+TE conflict and garbage: 400 CORAL_BAD_REQUEST', async () => {
    const before = clientErrors.length;
    await refused(`GET /a b HTTP/1.1\r\nHost: ${SITE}\r\n\r\n`, 400, 'CORAL_BAD_REQUEST');
    await refused(
      `GET /x HTTP/1.1\r\nHost: ${SITE}\r\nBad Header: x\r\n\r\n`,
      400,
      'CORAL_BAD_REQUEST',
    );
    await refused(
      `POST /x HTTP/1.1\r\nHost: ${SITE}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      400,
      'CORAL_BAD_REQUEST',
    );
    await refused('\u0001\u0002GARBAGE\r\n\r\n', 400, 'CORAL_BAD_REQUEST');
    expect(clientErrors.slice(before)).toEqual([
      'CORAL_BAD_REQUEST',
      'CORAL_BAD_REQUEST',
      'CORAL_BAD_REQUEST',
      'CORAL_BAD_REQUEST',
    ]);
  });

  it('a request head over the parser limit: 431 CORAL_HEADERS_TOO_LARGE', async () => {
    const big = 'x'.repeat(20_000);
    await refused(
      `GET /x HTTP/1.1\r\nHost: ${SITE}\r\nX-Big: ${big}\r\n\r\n`,
      431,
      'CORAL_HEADERS_TOO_LARGE',
    );
  });

  it('a smuggled second request after a valid one: the first is answered, the second gets 400 and the connection closes', async () => {
    const raw =
      `GET /first HTTP/1.1\r\nHost: ${SITE}\r\n\r\n` +
      `GET /second HTTP/1.1\r\nHost: ${SITE}\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n`;
    const text = await rawExchange(proxy.port, raw);
    // In order on the wire: the whole 200, then the 400 page, then the close.
    expect(text).toMatch(/^HTTP\/1\.1 200 [^]*\r\n\r\norigin bodyHTTP\/1\.1 400 Bad Request\r\n/);
    expect(text).toMatch(/connection: close[^]*CORAL_BAD_REQUEST/);
    expect(origin.hits.map((h) => h.url)).not.toContain('/second');
  });

  it('CONNECT: 405 with Allow, then closed (not a tunnel)', async () => {
    const r = await rawRequest(
      proxy.port,
      `CONNECT 127.0.0.66:${trap.port} HTTP/1.1\r\nHost: 127.0.0.66:${trap.port}\r\n\r\n`,
    );
    expect(r.status).toBe(405);
    expect(r.headers['allow']).toBe('GET, HEAD');
    expect(r.headers['x-coral-error']).toBe('CORAL_METHOD_NOT_ALLOWED');
    await r.closed;
    expect(trap.connections).toEqual([]);
  });
});
