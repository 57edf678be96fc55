/**
 * Adversary: framing errors inside a chunked request body (issue 31, item 5). The head parses, so
 * the request has reached the handler and its body is being streamed to a site's origin when the
 * parser fails on a malformed chunk extension or a chunk size that overflows. Over a raw socket on
 * loopback: a 400 `CORAL_BAD_REQUEST` arrives and the connection closes, at once — the wait is
 * bounded at 1 s here, well below the 3 s the proxy used to take (it waited for the origin's
 * answer to a body that would never end).
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingMetrics, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const SITE = 'www.school.test';
let origin: Origin;
let proxy: ProxyHarness;
const metrics = recordingMetrics();

beforeAll(async () => {
  // An origin that answers once the whole body is in (like most applications).
  origin = await startOrigin((_req, res) => {
    res.writeHead(200, { 'content-length': '2' });
    res.end('ok');
  });
  proxy = await startProxy({ sites: { [SITE]: `http://origin.test:${origin.port}` } }, { metrics });
});

afterAll(async () => {
  await proxy.close();
  await origin.close();
});

/** Send `raw`; resolve with every byte received once the proxy closes, or reject after `ms`. */
function exchange(raw: string, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ port: proxy.port, host: '127.0.0.1' });
    let text = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no answer and close within ${ms} ms; got ${JSON.stringify(text)}`));
    }, ms);
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    s.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
    s.on('error', () => {});
    s.write(raw);
  });
}

const post = (body: string) =>
  `POST /form HTTP/1.1\r\nHost: ${SITE}\r\nTransfer-Encoding: chunked\r\n` +
  `Content-Type: text/plain\r\n\r\n${body}`;

describe('malformed chunked request bodies (site mode POST)', () => {
  it.each([
    ['a malformed chunk extension', '5;\u0001bad\r\nhello\r\n0\r\n\r\n'],
    ['an overflowing chunk size', 'ffffffffffffffffffff\r\nhello\r\n0\r\n\r\n'],
  ])('%s: 400 CORAL_BAD_REQUEST and the connection closed at once', async (_what, body) => {
    const text = await exchange(post(body), 1_000);
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(text).toContain('CORAL_BAD_REQUEST');
    expect(metrics.log.clientError.at(-1)).toBe('CORAL_BAD_REQUEST');
    // The origin never received a complete request from it.
    expect(origin.hits.filter((h) => h.url === '/form')).toEqual([]);
  });

  it('a bad chunk after the body started streaming to the origin: 400 and closed at once', async () => {
    const s = connect({ port: proxy.port, host: '127.0.0.1' });
    s.on('error', () => {});
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    const closed = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not closed within 1 s: ${text}`)), 1_000);
      s.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    // The origin has the request (its head and first chunk) before the bad bytes are sent.
    const atOrigin = once(origin.server, 'request');
    s.write(post('5\r\nhello\r\n'));
    await atOrigin;
    s.write('zz;\u0001\r\n');
    await closed;
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toContain('CORAL_BAD_REQUEST');
  });

  it('a valid chunked POST on the same proxy is still forwarded', async () => {
    const valid = post('5\r\nhello\r\n0\r\n\r\n').replace(
      '\r\n\r\n',
      '\r\nConnection: close\r\n\r\n',
    );
    const text = await exchange(valid, 5_000);
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(origin.hits.at(-1)!.body.toString()).toBe('hello');
  });
});
