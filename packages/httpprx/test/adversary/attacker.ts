/**
 * The attacker's side of the adversary tests: a listener on its own 127.x address that records
 * every TCP connection it receives and answers any HTTP request with forged bytes that look like
 * a perfectly cacheable object, and a raw client that sends exactly the bytes it is given.
 */
import { createHash } from 'node:crypto';
import { createServer, connect } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { closer } from '../helpers/harness.js';

export const FORGED = Buffer.from('FORGED BYTES from the attacker\n'.repeat(64));
export const FORGED_SHA = createHash('sha256').update(FORGED).digest('hex');

export interface Trap {
  ip: string;
  port: number;
  /** Every connection accepted, with the bytes received on it. */
  connections: Array<{ from: string; data: string }>;
  close(): Promise<void>;
}

/** Listen on `ip` (an attacker-owned loopback address) and record everything. */
export async function startTrap(ip: string): Promise<Trap> {
  const connections: Trap['connections'] = [];
  const server: Server = createServer((s) => {
    const rec = { from: `${s.remoteAddress}:${s.remotePort}`, data: '' };
    connections.push(rec);
    s.on('data', (d: Buffer) => {
      rec.data += d.toString('latin1');
      if (rec.data.includes('\r\n\r\n')) {
        s.write(
          'HTTP/1.1 200 OK\r\ncache-control: max-age=86400\r\ncontent-type: text/html\r\n' +
            `x-coral-sha256: ${FORGED_SHA}\r\ncontent-length: ${FORGED.length}\r\n\r\n`,
        );
        s.write(FORGED);
      }
    });
    s.on('error', () => {});
  });
  const close = closer(server);
  await new Promise<void>((r) => server.listen(0, ip, r));
  return { ip, port: (server.address() as AddressInfo).port, connections, close };
}

export interface RawReply {
  status: number;
  head: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Resolves when the server closes the connection (await it only where a close is expected). */
  closed: Promise<void>;
}

/**
 * Send `raw` (a complete request, bytes exactly as given) from the local address `from` and read
 * one response: complete at its Content-Length, or when the server closes.
 */
export function rawRequest(
  port: number,
  raw: string | Buffer,
  from = '127.0.0.1',
  to = '127.0.0.1',
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: to, localAddress: from });
    const closed = new Promise<void>((r) => s.once('close', () => r()));
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (ended: boolean): boolean => {
      if (done) return true;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return false;
      const head = buf.subarray(0, end).toString('latin1');
      const lines = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const body = buf.subarray(end + 4);
      const cl = headers['content-length'];
      if (!ended && (cl === undefined || body.length < Number(cl))) return false;
      done = true;
      resolve({ status: Number(lines[0]!.split(' ')[1]), head, headers, body, closed });
      return true;
    };
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      finish(false);
    });
    s.on('end', () => {
      if (!finish(true)) reject(new Error(`no response to ${JSON.stringify(String(raw))}`));
      s.end();
    });
    s.on('error', (e) => {
      if (!done) reject(e);
    });
    s.write(raw);
  });
}

/** Send `raw` and collect every byte the server sends until it closes the connection. */
export function rawExchange(port: number, raw: string, to = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: to });
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    s.on('close', () => resolve(text));
    s.on('error', reject);
    s.write(raw);
  });
}
