/**
 * The designated member's 102 beat (src/peer/processing.ts), on a real server read by a raw
 * socket: 102 at once and at each beat of the clock, never after the final head (where it would
 * land in the body), and no timer left once the exchange has ended.
 */
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { keepProcessing, processingIntervalMs } from '../../src/peer/processing.js';
import { until } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A server whose one response is handed to the test, and a raw client that keeps every byte. */
async function exchange() {
  const clock = new ManualClock(0);
  let res: ServerResponse | undefined;
  const server = createServer((_req, r) => (res = r));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const sock = connect((server.address() as AddressInfo).port, '127.0.0.1');
  let text = '';
  sock.on('data', (b: Buffer) => (text += b.toString('latin1')));
  sock.write('GET /x HTTP/1.1\r\nHost: a\r\n\r\n');
  await until(() => res !== undefined, 'the request reached the server');
  return { clock, res: res!, read: () => text, sock };
}

const count102 = (text: string) => text.split('HTTP/1.1 102 Processing\r\n\r\n').length - 1;

describe('keepProcessing', () => {
  it('beats 102 until the head, then nothing more (the body is exactly what was written)', async () => {
    const x = await exchange();
    keepProcessing(x.res, x.clock, 100);
    await until(() => count102(x.read()) === 1, 'the first 102 at once');
    await x.clock.advance(100);
    await until(() => count102(x.read()) === 2, 'a 102 at the first beat');
    await x.clock.advance(99);
    await x.clock.advance(1);
    await until(() => count102(x.read()) === 3, 'a 102 at the second beat');
    x.res.writeHead(200, { 'content-length': '5' });
    x.res.end('hello');
    await until(() => x.read().endsWith('hello'), 'the answer');
    await x.clock.advance(1_000);
    expect(count102(x.read())).toBe(3);
    expect(x.read().split('\r\n\r\n').at(-1)).toBe('hello');
    expect(x.clock.nextAt()).toBeUndefined();
  });

  it('stops when the asker goes away', async () => {
    const x = await exchange();
    keepProcessing(x.res, x.clock, 100);
    await until(() => count102(x.read()) === 1, 'the first 102');
    x.sock.destroy();
    await until(() => x.res.destroyed, 'the server saw the close');
    expect(x.clock.nextAt()).toBeUndefined();
  });

  it('beats three times per peer timeout', () => {
    expect(processingIntervalMs(1_000)).toBe(333);
    expect(processingIntervalMs(3)).toBe(10);
  });
});
