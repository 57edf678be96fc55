import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import { waitFor } from '@coral/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { LiveHub, formatJson, parseFilter, streamLogs } from '../src/index.js';
import type { AccessRecord, EndReason } from '../src/index.js';
import { record } from './records.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const publish = (hub: LiveHub, r: AccessRecord) => hub.publish(r, () => formatJson(r));

/** A server streaming `hub` at any path, filters from the query; its responses and ends. */
async function serve(hub: LiveHub) {
  const ends: EndReason[] = [];
  const responses: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    const filter = parseFilter({
      host: q.get('host') ?? undefined,
      status: q.get('status') ?? undefined,
    });
    responses.push(res);
    void streamLogs(hub.subscribe(filter), res).then((r) => ends.push(r));
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, ends, responses };
}

/** A raw client: what it has read so far. */
function client(port: number, path: string): { socket: Socket; text: () => string } {
  const socket = connect(port, '127.0.0.1');
  socket.write(`GET ${path} HTTP/1.1\r\nHost: admin\r\n\r\n`);
  let text = '';
  socket.on('error', () => {}); // a reader cut off sees a reset
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  return { socket, text: () => text };
}

describe('streamLogs (NDJSON over HTTP)', () => {
  it('streams the lines a reader’s filter passes, as they happen, and stops when it leaves', async () => {
    const hub = new LiveHub();
    const { port, ends } = await serve(hub);
    const errors = client(port, '/v1/logs?status=5xx');
    const all = client(port, '/v1/logs');
    await waitFor(() => hub.stats.subscribers === 2);
    expect(errors.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(errors.text()).toContain('content-type: application/x-ndjson; charset=utf-8');
    publish(hub, record({ requestId: 'ok' }));
    publish(hub, record({ requestId: 'bad', status: 502 }));
    await waitFor(() => all.text().includes('"requestId":"bad"'));
    await waitFor(() => errors.text().includes('"requestId":"bad"'));
    expect(errors.text()).not.toContain('"requestId":"ok"');
    expect(all.text()).toContain('"requestId":"ok"');
    errors.socket.destroy();
    await waitFor(() => hub.stats.subscribers === 1);
    await waitFor(() => ends.length === 1);
    expect(ends).toEqual(['closed']);
    all.socket.destroy();
    await waitFor(() => hub.stats.subscribers === 0);
  });

  it('disconnects a reader that stops reading, holding no more than its bounds meanwhile', async () => {
    const queueBytes = 64 * 1024;
    const hub = new LiveHub({}, { queueBytes });
    const { port, ends, responses } = await serve(hub);
    const slow = client(port, '/v1/logs');
    const fast = client(port, '/v1/logs');
    await waitFor(() => hub.stats.subscribers === 2);
    slow.socket.pause(); // reads nothing more: the kernel buffers fill, then node's, then the queue
    const big = 'x'.repeat(2000);
    let n = 0;
    let maxHeld = 0;
    while (hub.stats.droppedSlow === 0 && n < 100_000) {
      for (let i = 0; i < 8; i++) publish(hub, record({ requestId: `r-${n++}`, userAgent: big }));
      // What the node holds for the slow reader: node:http's buffer (the hub's queue is checked
      // by the hub itself against queueBytes).
      maxHeld = Math.max(maxHeld, responses[0]!.writableLength);
      await new Promise((r) => setImmediate(r));
    }
    expect(hub.stats.droppedSlow).toBe(1);
    expect(n).toBeLessThan(100_000);
    // One write past the high-water mark at most: a batch is at most one queue's worth.
    expect(maxHeld).toBeLessThanOrEqual(responses[0]!.writableHighWaterMark + queueBytes);
    await waitFor(() => ends.includes('slow'));
    expect(responses[0]!.destroyed).toBe(true);
    // The reader that kept up is still there and still gets lines.
    expect(hub.stats.subscribers).toBe(1);
    publish(hub, record({ requestId: 'after' }));
    await waitFor(() => fast.text().includes('"requestId":"after"'));
    fast.socket.destroy();
    slow.socket.destroy();
  });

  it('ends every stream when the hub closes', async () => {
    const hub = new LiveHub();
    const { port, ends } = await serve(hub);
    const c = client(port, '/v1/logs');
    await waitFor(() => hub.stats.subscribers === 1);
    hub.close();
    await waitFor(() => ends.length === 1);
    expect(ends).toEqual(['hub-closed']);
    // Chunked encoding's last chunk: the response ended cleanly.
    await waitFor(() => c.text().endsWith('0\r\n\r\n'));
    c.socket.destroy();
  });
});
