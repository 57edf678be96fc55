/**
 * Response rate limiting over real UDP: a flood from 127.0.0.2 is limited while 127.0.0.3 is
 * still answered. The server's clock is manual, so token buckets refill only when the test says.
 */
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeQuery, fleet, header, node, udpAsk, waitFor } from '../helpers.js';
import { start, type Started } from './support.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

describe('response rate limiting', () => {
  it('limits a flood from one source while another source is answered', async () => {
    s = await start(
      { rrl: { responsesPerSecond: 5, slip: 2, ipv4PrefixLength: 32 } },
      fleet().add(node(2)),
    );
    const flood = dgram.createSocket('udp4');
    await new Promise<void>((r) => flood.bind(0, '127.0.0.2', () => r()));
    const got: Buffer[] = [];
    flood.on('message', (m) => got.push(m));
    const N = 60;
    for (let i = 0; i < N; i++) {
      flood.send(encodeQuery({ name: 'www.example.com.nyud.net', id: i }), s.port, '127.0.0.1');
    }
    await waitFor(() => s!.server.stats().queries.udp === N);

    // Another source (same name, same type) is answered in full.
    const other = await udpAsk(s.port, encodeQuery({ name: 'www.example.com.nyud.net', id: 999 }), {
      from: '127.0.0.3',
    });
    expect(header(other)).toMatchObject({ id: 999, tc: false, an: 2 });

    // The flood: 5 full answers (the burst), then every 2nd limited answer slips out truncated.
    const stats = s.server.stats().rrl;
    expect(stats.allowed).toBe(5 + 1);
    expect(stats.slipped).toBe(Math.floor((N - 5) / 2));
    expect(stats.dropped).toBe(N - 5 - Math.floor((N - 5) / 2));
    await waitFor(() => got.length === 5 + stats.slipped);
    const full = got.filter((m) => !header(m).tc);
    const slips = got.filter((m) => header(m).tc);
    expect(full).toHaveLength(5);
    expect(slips.every((m) => header(m).an === 0)).toBe(true);
    expect(s.server.recentDecisions().some((d) => d.outcome === 'rrl-drop')).toBe(true);

    // A second later the bucket has refilled: 127.0.0.2 is answered again.
    await s.clock.advance(1000);
    got.length = 0;
    flood.send(encodeQuery({ name: 'www.example.com.nyud.net', id: 500 }), s.port, '127.0.0.1');
    await waitFor(() => got.length === 1);
    expect(header(got[0]!)).toMatchObject({ id: 500, tc: false, an: 2 });
    flood.close();
  });

  it('TCP is never rate limited; exempt prefixes are not either', async () => {
    s = await start({ rrl: { responsesPerSecond: 1, slip: 0, exempt: ['127.0.0.4/32'] } });
    for (let i = 0; i < 5; i++) {
      const r = await udpAsk(s.port, encodeQuery({ name: 'nyud.net', type: 6, id: i }), {
        from: '127.0.0.4',
      });
      expect(header(r).id).toBe(i);
    }
    expect(s.server.stats().rrl.exempt).toBe(5);
  });
});
