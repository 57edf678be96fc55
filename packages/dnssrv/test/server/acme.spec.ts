/**
 * ACME DNS-01 (RFC 8555 §8.4) over real UDP and TCP on loopback, asked by Node's own resolver:
 * values set in the challenge store are answered at once, several at a time, with a short TTL,
 * and removed values are gone at once (NODATA).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryChallengeStore, TYPE } from '../../src/index.js';
import { encodeQuery, fleet, header, node, parse, udpAsk } from '../helpers.js';
import { lastDecision, resolver, start, type Started } from './support.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const NAME = '_acme-challenge.nyud.net';
// Two key authorization digests (base64url SHA-256): a wildcard plus apex order has two at once.
const WILDCARD = 'LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0';
const APEX = '9Z2KTUUQ3sAvW4o2Nh8NbRHCPoQqqkf7tD7JNhLF4zE';

async function withStore(options = {}): Promise<InMemoryChallengeStore> {
  const store = new InMemoryChallengeStore();
  s = await start(options, fleet().add(node(2)), { challenges: store });
  return store;
}

describe('_acme-challenge TXT from the challenge store', () => {
  it('set → answered → removed → NODATA, with Node’s resolver', async () => {
    const store = await withStore();
    await expect(resolver(s!.port).resolveTxt(NAME)).rejects.toMatchObject({ code: 'ENODATA' });
    store.set('nyud.net', WILDCARD);
    expect(await resolver(s!.port).resolveTxt(NAME)).toEqual([[WILDCARD]]);
    store.set('nyud.net', APEX);
    expect((await resolver(s!.port).resolveTxt('_ACME-Challenge.NYUD.net')).sort()).toEqual(
      [[WILDCARD], [APEX]].sort(),
    );
    store.remove('nyud.net', WILDCARD);
    expect(await resolver(s!.port).resolveTxt(NAME)).toEqual([[APEX]]);
    store.remove('nyud.net');
    await expect(resolver(s!.port).resolveTxt(NAME)).rejects.toMatchObject({ code: 'ENODATA' });
  });

  it('answers are authoritative, TTL 60 s (configurable), and never served from the cache', async () => {
    const store = await withStore({ challengeTtl: 30 });
    store.set('nyud.net', WILDCARD);
    const r = await udpAsk(s!.port, encodeQuery({ name: NAME, type: TYPE.TXT, edns: {} }));
    expect(header(r)).toMatchObject({ rcode: 0, aa: true, an: 1 });
    // One character-string (a 43-character token fits in one; dns2 3 returns TXT rdata as the list
    // of its character-strings, RFC 1035 §3.3.14).
    expect(parse(r).answers[0]).toMatchObject({ type: TYPE.TXT, ttl: 30, data: [WILDCARD] });
    await udpAsk(s!.port, encodeQuery({ name: NAME, type: TYPE.TXT, edns: {} }));
    expect(lastDecision(s!.server).cached).toBe(false);
    store.remove('nyud.net');
    const gone = await udpAsk(s!.port, encodeQuery({ name: NAME, type: TYPE.TXT, edns: {} }));
    // NODATA: NOERROR, no answer, the zone's SOA for negative caching (RFC 2308).
    expect(header(gone)).toMatchObject({ rcode: 0, aa: true, an: 0, ns: 1 });
    expect(parse(gone).authorities[0]).toMatchObject({ type: TYPE.SOA, name: 'nyud.net' });
    expect(s!.server.stats().cache.entries).toBe(0);
  });

  it('other types at the name are NODATA; other zones’ values are not answered', async () => {
    const store = await withStore();
    store.set('nyud.net', WILDCARD);
    store.set('example.org', APEX);
    const a = await udpAsk(s!.port, encodeQuery({ name: NAME, type: TYPE.A }));
    expect(header(a)).toMatchObject({ rcode: 0, an: 0, ns: 1 });
    expect(await resolver(s!.port).resolveTxt(NAME)).toEqual([[WILDCARD]]);
    // A sub-name is not the challenge name.
    const sub = await udpAsk(s!.port, encodeQuery({ name: `x.${NAME}`, type: TYPE.TXT }));
    expect(header(sub).rcode).toBe(3);
  });

  it('an answer too big for UDP is truncated and Node’s resolver gets it all over TCP', async () => {
    const store = await withStore();
    const values = Array.from({ length: 12 }, (_, i) => `${i}`.padStart(100, 'v'));
    for (const v of values) store.set('nyud.net', v);
    const udp = await udpAsk(s!.port, encodeQuery({ name: NAME, type: TYPE.TXT, edns: {} }));
    expect(header(udp)).toMatchObject({ tc: true, an: 0 });
    const got = await resolver(s!.port).resolveTxt(NAME);
    expect(got.map((chunks) => chunks.join('')).sort()).toEqual([...values].sort());
    expect(s!.server.stats().queries.tcp).toBeGreaterThan(0);
  });

  it('rate limiting applies (per /24, per name): a CA’s few vantage points stay far below it', async () => {
    const store = await withStore({ rrl: { responsesPerSecond: 5, slip: 1 } });
    store.set('nyud.net', WILDCARD);
    const q = encodeQuery({ name: NAME, type: TYPE.TXT });
    const got = [];
    for (let i = 0; i < 7; i++) got.push(header(await udpAsk(s!.port, q)));
    // Five answers, then slips (TC, no records): the resolver retries over TCP, never limited.
    expect(got.map((h) => h.an)).toEqual([1, 1, 1, 1, 1, 0, 0]);
    expect(got.slice(5).every((h) => h.tc)).toBe(true);
    expect(await resolver(s!.port).resolveTxt(NAME)).toEqual([[WILDCARD]]);
  });
});
