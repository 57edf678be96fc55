/** A DNS client for the workers' tests: one query per fresh socket, so the kernel's hash picks any worker. */
import dgram from 'node:dgram';
import dns2 from 'dns2';

const { Packet } = dns2;

/** A DNS query for `name` (A, IN, RD) with id `id`. */
export function query(name: string, id: number, type = 1): Buffer {
  const labels = name
    .split('.')
    .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const head = Buffer.alloc(12);
  head.writeUInt16BE(id, 0);
  head.writeUInt16BE(0x0100, 2);
  head.writeUInt16BE(1, 4);
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(type, 0);
  tail.writeUInt16BE(1, 2);
  return Buffer.concat([head, ...labels, Buffer.from([0]), tail]);
}

/** The A records of an answer, sorted (the order is the server's random choice); dns2 parses. */
export function addresses(msg: Buffer): string[] {
  return Packet.parse(msg)
    .answers.filter((a) => a.type === Packet.TYPE.A)
    .map((a) => (a as unknown as { address: string }).address)
    .sort();
}

/** The TXT strings of an answer. */
export function texts(msg: Buffer): string[] {
  return Packet.parse(msg)
    .answers.filter((a) => a.type === Packet.TYPE.TXT)
    .flatMap((a) => (a as unknown as { data: string | string[] }).data);
}

/** One query from a fresh socket (a new source port, so the kernel's hash picks any worker). */
export async function ask(
  port: number,
  msg: Buffer,
  host = '127.0.0.1',
  from = host,
): Promise<Buffer> {
  const sock = dgram.createSocket('udp4');
  try {
    await new Promise<void>((r) => sock.bind(0, from, () => r()));
    return await new Promise<Buffer>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('udp timeout')), 5000);
      sock.once('message', (m) => {
        clearTimeout(t);
        resolve(m);
      });
      sock.send(msg, port, host);
    });
  } finally {
    sock.close();
  }
}
