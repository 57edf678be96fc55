/**
 * Adversary: rotating names against response rate limiting, over real UDP. Every name under the
 * zone answers, so an attacker (or a reflection flood with a spoofed source) asking a new name
 * each time used to get a fresh budget per name. With answers keyed per (client /24, zone), the
 * budget holds whatever the names and types; another source is still answered. The server's clock
 * is manual: buckets refill only when the test advances it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TYPE } from '../../src/index.js';
import { encodeQuery, fleet, header, node, udpAsk, waitFor } from '../helpers.js';
import { start, type Started } from '../server/support.js';
import { udpAttacker } from './attacker.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const RATE = 20; // the production default (rrl: {} below)

describe('adversary: RRL with rotating names', () => {
  it('synthesized answers and NXDOMAINs share one budget per (prefix, zone); another source is answered', async () => {
    s = await start({ rrl: {} }, fleet().add(node(2)).add(node(3)));
    const a1 = await udpAttacker('127.66.0.2');
    const a2 = await udpAttacker('127.66.0.3'); // same /24: same budget
    // Names and types rotate. The fleet has no IPv6: A and ANY are answers, AAAA, CNAME (proxies
    // are live) and MX are NODATA; each kind has its own budget per (prefix, zone).
    const MX = 15; // a type the server does not serve: NODATA
    const types = [TYPE.A, TYPE.AAAA, TYPE.ANY, TYPE.CNAME, MX];
    const sent = new Map<number, Buffer>();
    const N = 200;
    for (let i = 0; i < N; i++) {
      const name = `www${i}.victim${i % 7}.com.nyud.net`;
      const q = encodeQuery({ name, type: types[i % 5], id: i });
      sent.set(i, q);
      (i % 2 ? a2 : a1).send(q, s.port);
    }
    // Rotating invalid names: NXDOMAIN, keyed by zone too.
    for (let i = 0; i < N; i++) {
      const q = encodeQuery({ name: `junk${i}.nyud.net`, id: 1000 + i });
      sent.set(1000 + i, q);
      a1.send(q, s.port);
    }
    await waitFor(() => s!.server.stats().queries.udp === 2 * N);

    // The victim, another /24, asks the same kind of name and is answered in full.
    const victim = await udpAsk(s.port, encodeQuery({ name: 'www.victim0.com.nyud.net', id: 9 }), {
      from: '127.77.0.3',
    });
    expect(header(victim)).toMatchObject({ id: 9, tc: false, rcode: 0, an: 2 });

    // The attacker's /24 got one burst per kind (answer, nodata, nxdomain) for all 400 names.
    const rrl = s.server.stats().rrl;
    expect(rrl.allowed).toBe(3 * RATE + 1); // + the victim
    // Every 2nd limited response slips (TC): 60 answers, 100 NODATA and 180 NXDOMAIN were limited.
    expect(rrl.slipped).toBe(60 / 2 + 100 / 2 + 180 / 2);
    expect(rrl.dropped + rrl.slipped).toBe(2 * N - 3 * RATE);
    await waitFor(() => a1.got.length + a2.got.length === 3 * RATE + rrl.slipped);
    const got = [...a1.got, ...a2.got];
    expect(got.filter((m) => !header(m).tc)).toHaveLength(3 * RATE);
    // A slip is the question back with TC and no records: never larger than what was sent.
    for (const m of got.filter((x) => header(x).tc)) {
      expect(header(m)).toMatchObject({ an: 0, ns: 0, ar: 0 });
      expect(m.length).toBeLessThanOrEqual(sent.get(header(m).id)!.length);
    }

    // A second later the bucket holds RATE more, no more, however many names are rotated.
    await s.clock.advance(1000);
    const before = s.server.stats().rrl.allowed;
    for (let i = 0; i < N; i++)
      a1.send(encodeQuery({ name: `again${i}.example.com.nyud.net`, id: i }), s.port);
    await waitFor(() => s!.server.stats().queries.udp === 3 * N + 1);
    expect(s.server.stats().rrl.allowed - before).toBe(RATE);
  });

  it('rotating types of one name or names of many zones-looking shapes do not help either', async () => {
    s = await start({ rrl: { responsesPerSecond: 5, slip: 0 } }, fleet().add(node(2)));
    const a = await udpAttacker('127.66.0.9');
    const names = [
      'a.com.nyud.net',
      'a.com.8080.nyud.net',
      'b.b.b.b.example.org.nyud.net',
      'x-y.co.uk.443.nyud.net',
      'A.COM.NYUD.NET',
    ];
    for (let i = 0; i < 100; i++)
      a.send(
        encodeQuery({ name: names[i % names.length]!, type: i % 2 ? TYPE.A : TYPE.ANY, id: i }),
        s.port,
      );
    await waitFor(() => s!.server.stats().queries.udp === 100);
    expect(s.server.stats().rrl).toMatchObject({ allowed: 5, dropped: 95, slipped: 0 });
    await waitFor(() => a.got.length === 5);
  });
});
