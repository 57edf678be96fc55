import { afterEach, describe, expect, it } from 'vitest';
import { DnsServer } from '../../src/index.js';
import { encodeQuery, fleet, header, tcpAsk, udpAsk } from '../helpers.js';

const NAME = 'www.example.com.nyud.net';
const options = {
  nameservers: [{ name: 'ns1.nyud.net', ipv4: '192.0.2.53' }],
  rrl: { responsesPerSecond: 0 },
};

describe('DnsServer with reusePort', () => {
  const servers: DnsServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('lets several servers share one UDP and TCP port, the kernel spreading clients over them', async () => {
    const a = new DnsServer({ directory: fleet() }, options);
    const b = new DnsServer({ directory: fleet() }, options);
    servers.push(a, b);
    const { port } = await a.listen({ port: 0, host: '127.0.0.1', reusePort: true });
    await b.listen({ port, host: '127.0.0.1', reusePort: true });
    // Each query from a fresh socket (a new source port): the kernel hashes the 4-tuple.
    for (let i = 0; i < 64; i++) {
      expect(header(await udpAsk(port, encodeQuery({ name: NAME, id: i }))).an).toBeGreaterThan(0);
    }
    for (let i = 0; i < 16; i++) {
      const [r] = await tcpAsk(port, [encodeQuery({ name: NAME, id: i })]);
      expect(header(r!).an).toBeGreaterThan(0);
    }
    const [sa, sb] = [a.stats().queries, b.stats().queries];
    expect(sa.udp + sb.udp).toBe(64);
    expect(sa.tcp + sb.tcp).toBe(16);
    // Both got a share (64 independent flows all hashed to one socket: p = 2^-63).
    expect(sa.udp).toBeGreaterThan(0);
    expect(sb.udp).toBeGreaterThan(0);
  });

  it('refuses a second server on the port when either binds without it', async () => {
    const a = new DnsServer({ directory: fleet() }, options);
    servers.push(a);
    const { port } = await a.listen({ port: 0, host: '127.0.0.1', reusePort: true });
    const b = new DnsServer({ directory: fleet() }, options);
    servers.push(b);
    await expect(b.listen({ port, host: '127.0.0.1' })).rejects.toMatchObject({
      code: 'DNS_ERR_LISTEN',
    });
  });
});
