/**
 * Test helpers: a raw query encoder written independently of src/ (so the server's decoder is
 * checked against bytes built by hand), dns2's parser as an independent response decoder, and
 * real UDP/TCP exchanges on loopback.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import dns2 from 'dns2';
import { SeededRandom } from '@coral/testkit';
import { InMemoryNodeDirectory, type NodeInfo } from '../src/index.js';

export const { Packet } = dns2;
export type Parsed = ReturnType<typeof Packet.parse>;

export interface QuerySpec {
  name: string;
  type?: number;
  qclass?: number;
  id?: number;
  rd?: boolean;
  opcode?: number;
  edns?: {
    udpSize?: number;
    version?: number;
    dnssecOk?: boolean;
    ecs?: { family?: number; sourcePrefix: number; scopePrefix?: number; address: number[] };
  };
}

/** Encode a query by hand (labels as given, case preserved). */
export function encodeQuery(spec: QuerySpec): Buffer {
  const labels = spec.name === '' ? [] : spec.name.replace(/\.$/, '').split('.');
  const parts: Buffer[] = [];
  const h = Buffer.alloc(12);
  h.writeUInt16BE(spec.id ?? 0x1234, 0);
  h[2] = ((spec.opcode ?? 0) << 3) | (spec.rd ? 1 : 0);
  h.writeUInt16BE(1, 4);
  h.writeUInt16BE(spec.edns ? 1 : 0, 10);
  parts.push(h);
  for (const l of labels) parts.push(Buffer.from([l.length]), Buffer.from(l, 'latin1'));
  const tail = Buffer.alloc(5);
  tail.writeUInt16BE(spec.type ?? 1, 1);
  tail.writeUInt16BE(spec.qclass ?? 1, 3);
  parts.push(tail);
  if (spec.edns) {
    const e = spec.edns;
    let rdata = Buffer.alloc(0);
    if (e.ecs) {
      const n = Math.ceil(e.ecs.sourcePrefix / 8);
      rdata = Buffer.alloc(8 + n);
      rdata.writeUInt16BE(8, 0);
      rdata.writeUInt16BE(4 + n, 2);
      rdata.writeUInt16BE(e.ecs.family ?? 1, 4);
      rdata[6] = e.ecs.sourcePrefix;
      rdata[7] = e.ecs.scopePrefix ?? 0;
      Buffer.from(e.ecs.address.slice(0, n)).copy(rdata, 8);
    }
    const opt = Buffer.alloc(11);
    opt[0] = 0;
    opt.writeUInt16BE(41, 1);
    opt.writeUInt16BE(e.udpSize ?? 1232, 3);
    opt[6] = e.version ?? 0;
    opt[7] = e.dnssecOk ? 0x80 : 0;
    opt.writeUInt16BE(rdata.length, 9);
    parts.push(opt, rdata);
  }
  return Buffer.concat(parts);
}

/** Header fields read by hand (dns2's parser hides TC/AA nuances behind objects). */
export function header(b: Buffer) {
  return {
    id: b.readUInt16BE(0),
    qr: (b[2]! & 0x80) !== 0,
    aa: (b[2]! & 0x04) !== 0,
    tc: (b[2]! & 0x02) !== 0,
    rd: (b[2]! & 0x01) !== 0,
    rcode: b[3]! & 0x0f,
    qd: b.readUInt16BE(4),
    an: b.readUInt16BE(6),
    ns: b.readUInt16BE(8),
    ar: b.readUInt16BE(10),
  };
}

/** The question name exactly as the response carries it (wire labels, case kept). */
export function questionName(b: Buffer): string {
  const labels: string[] = [];
  let p = 12;
  while (b[p]! !== 0) {
    const len = b[p]!;
    labels.push(b.subarray(p + 1, p + 1 + len).toString('latin1'));
    p += 1 + len;
  }
  return labels.join('.');
}

export function parse(b: Buffer): Parsed {
  return Packet.parse(b);
}

/** The ECS option echoed in a response, if any. */
export function ecsOf(
  p: Parsed,
): { sourcePrefixLength: number; scopePrefixLength: number; ip: string } | undefined {
  const opt = p.additionals.find((r) => r.type === 41) as unknown as
    | {
        rdata?: {
          ednsCode: number;
          sourcePrefixLength: number;
          scopePrefixLength: number;
          ip: string;
        }[];
      }
    | undefined;
  return opt?.rdata?.find((o) => o.ednsCode === 8);
}

/** One UDP round trip from a socket bound to `from` (default 127.0.0.1). */
export async function udpAsk(
  port: number,
  msg: Buffer,
  opts: { from?: string; timeoutMs?: number } = {},
): Promise<Buffer> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, opts.from ?? '127.0.0.1', () => r()));
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('udp timeout')), opts.timeoutMs ?? 5000);
      sock.once('message', (m) => {
        clearTimeout(t);
        resolve(m);
      });
      sock.send(msg, port, '127.0.0.1');
    });
  } finally {
    sock.close();
  }
}

/** A DNS message with its two-byte TCP length prefix (RFC 7766). */
export function frame(msg: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(msg.length);
  return Buffer.concat([len, msg]);
}

/** A connected TCP socket to the server on loopback, from `from` (default 127.0.0.1). */
export async function tcpConnect(port: number, from?: string): Promise<net.Socket> {
  const sock = net.connect({ port, host: '127.0.0.1', ...(from ? { localAddress: from } : {}) });
  sock.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', () => resolve());
    sock.once('close', () => reject(new Error('closed before connecting')));
  });
  return sock;
}

/** Length-prefixed exchange over one TCP connection; sends all `msgs`, returns as many answers. */
export async function tcpAsk(port: number, msgs: Buffer[]): Promise<Buffer[]> {
  const sock = net.connect({ port, host: '127.0.0.1' });
  await new Promise<void>((r, j) => {
    sock.once('connect', () => r());
    sock.once('error', j);
  });
  const out: Buffer[] = [];
  let buf = Buffer.alloc(0);
  const done = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('tcp timeout')), 5000);
    sock.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const n = buf.readUInt16BE(0);
        out.push(buf.subarray(2, 2 + n));
        buf = buf.subarray(2 + n);
      }
      if (out.length >= msgs.length) {
        clearTimeout(t);
        resolve();
      }
    });
  });
  for (const m of msgs) {
    const len = Buffer.alloc(2);
    len.writeUInt16BE(m.length);
    sock.write(Buffer.concat([len, m]));
  }
  await done;
  sock.destroy();
  return out;
}

/** Poll `cond` on the event loop (no fixed sleeps); fail after `limitMs`. */
export { waitFor } from '@coral/testkit';

export const hex = (i: number): string => i.toString(16).padStart(40, '0');

export function node(i: number, extra: Partial<NodeInfo> = {}): NodeInfo {
  return { id: hex(i), ipv4: `10.0.0.${i}`, httpPort: 8090, ...extra };
}

/** A fleet: self = node 1; deterministic order from a seeded random. */
export function fleet(seed = 1): InMemoryNodeDirectory {
  return new InMemoryNodeDirectory({ random: new SeededRandom(seed) }, { self: node(1) });
}
