/**
 * Names through the shared codec (@coral/names, issue 11): one-label names are answered like the
 * legacy ones, configured nameserver names are matched before the codec, and what a name gets
 * when no proxy is live depends on its form and origin.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TYPE } from '../../src/index.js';
import { encodeQuery, fleet, header, node, parse, udpAsk } from '../helpers.js';
import { lastDecision, resolver, start, type Started } from './support.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const live = () => fleet().add(node(2)).add(node(3));

describe('one-label names are answered like the legacy ones', () => {
  const names = [
    'www-example-com.nyud.net', // https://www.example.com
    'www-example-com---8443.nyud.net', // https://www.example.com:8443
    'www-example-com---h.nyud.net', // http://www.example.com
    'www-example-com---h8080.nyud.net', // http://www.example.com:8080
    'xn--bcher-ch-65a.nyud.net', // https://bücher.ch
    '192-0-2-7.nyud.net', // https://192.0.2.7
    'www.example.com.nyud.net', // legacy
  ];
  for (const name of names) {
    it(`${name}: two proxies, then the same answer from the cache`, async () => {
      s = await start({}, live());
      const first = await resolver(s.port).resolve4(name, { ttl: true });
      expect(first).toHaveLength(2);
      expect(first.every((a) => a.ttl === 30)).toBe(true);
      expect(lastDecision(s.server)).toMatchObject({ name, rcode: 'NOERROR', cached: false });
      const again = await resolver(s.port).resolve4(name);
      expect(again).toEqual(first.map((a) => a.address));
      expect(lastDecision(s.server).cached).toBe(true);
    });
  }

  it('the same location logic: a resolver within level 2 gets the level-2 cluster, TTL 60 s', async () => {
    const dir = fleet()
      .add(node(2), { clusters: [1, 2] })
      .add(node(3));
    s = await start({}, dir);
    await resolver(s.port).resolve4('www-example-com.nyud.net'); // starts the probe
    s.prober.settle(5);
    await new Promise((r) => setImmediate(r));
    const got = await resolver(s.port).resolve4('www-example-com.nyud.net', { ttl: true });
    expect(got.map((a) => a.address).sort()).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(got.every((a) => a.ttl === 60)).toBe(true);
    expect(lastDecision(s.server)).toMatchObject({ method: 'rtt' });
  });

  it('names the codec refuses are NXDOMAIN, and the decision says why', async () => {
    s = await start({}, live());
    const cases: [string, string][] = [
      ['www-example-com---443.nyud.net', 'NAMES_ERR_NOT_CANONICAL'],
      ['www-example-com-----8080.nyud.net', 'NAMES_ERR_BAD_MARKER'],
      ['www-example-com---99999.nyud.net', 'NAMES_ERR_BAD_PORT'],
      ['xn--99999999999.nyud.net', 'NAMES_ERR_BAD_IDN'],
      ['_dmarc.nyud.net', 'NAMES_ERR_RESERVED'],
      ['www-example-com-nyud-net.nyud.net', 'NAMES_ERR_ORIGIN_IN_ZONE'],
      ['localhost.nyud.net', 'NAMES_ERR_BAD_HOST'],
    ];
    for (const [name, code] of cases) {
      const r = await udpAsk(s.port, encodeQuery({ name }));
      expect(header(r), name).toMatchObject({ rcode: 3, aa: true, an: 0, ns: 1 });
      expect(lastDecision(s.server).detail, name).toContain(code);
    }
  });

  it('a configured nameserver name is matched before the codec', async () => {
    // `my-ns` is also the one-label spelling of https://my.ns.
    s = await start({ nameservers: [{ name: 'my-ns.nyud.net', ipv4: '192.0.2.53' }] }, live());
    expect(await resolver(s.port).resolve4('my-ns.nyud.net')).toEqual(['192.0.2.53']);
    expect(lastDecision(s.server).detail).toBe('nameserver address');
    // The same spelling under another label count is still an origin.
    expect(await resolver(s.port).resolve4('my-ns-x.nyud.net')).toHaveLength(2);
  });
});

describe('no live proxy', () => {
  const dead = async (): Promise<Started> => {
    const st = await start({}, fleet().add(node(2), { live: false }));
    st.dir.setLive(node(1).id, false);
    return st;
  };

  it('legacy http name: a CNAME to the origin host, short TTL, not cached', async () => {
    s = await dead();
    const r = parse(await udpAsk(s.port, encodeQuery({ name: 'www.example.com.8080.nyud.net' })));
    expect(r.answers).toEqual([
      expect.objectContaining({ type: TYPE.CNAME, domain: 'www.example.com', ttl: 10 }),
    ]);
    await udpAsk(s.port, encodeQuery({ name: 'www.example.com.8080.nyud.net' }));
    expect(lastDecision(s.server)).toMatchObject({ method: 'no-proxy', cached: false });
  });

  it('legacy name of a public IPv4 origin: an A record of the address, NODATA for AAAA', async () => {
    s = await dead();
    expect(await resolver(s.port).resolve4('93.184.216.34.8080.nyud.net', { ttl: true })).toEqual([
      { address: '93.184.216.34', ttl: 10 },
    ]);
    const aaaa = await udpAsk(s.port, encodeQuery({ name: '93.184.216.34.nyud.net', type: 28 }));
    expect(header(aaaa)).toMatchObject({ rcode: 0, an: 0, ns: 1 });
    const cname = await udpAsk(s.port, encodeQuery({ name: '93.184.216.34.nyud.net', type: 5 }));
    expect(header(cname)).toMatchObject({ rcode: 0, an: 0 });
  });

  it('an IPv4 origin that is not public gets no address: SERVFAIL', async () => {
    s = await dead();
    for (const name of ['10.0.0.5.nyud.net', '127.0.0.1.8092.nyud.net', '192.168.1.1.nyud.net']) {
      const r = await udpAsk(s.port, encodeQuery({ name }));
      expect(header(r), name).toMatchObject({ rcode: 2, an: 0 });
      expect(lastDecision(s.server).detail).toContain('not a public address');
    }
  });

  it('one-label names (https or http): SERVFAIL, never a CNAME the client could not use', async () => {
    s = await dead();
    for (const name of [
      'www-example-com.nyud.net',
      'www-example-com---h.nyud.net',
      '93-184-216-34.nyud.net',
    ]) {
      const r = await udpAsk(s.port, encodeQuery({ name, edns: {} }));
      expect(header(r), name).toMatchObject({ rcode: 2, aa: false, an: 0 });
      expect(lastDecision(s.server)).toMatchObject({ method: 'no-proxy', cached: false });
      await expect(resolver(s.port).resolve4(name)).rejects.toMatchObject({ code: 'ESERVFAIL' });
    }
  });
});

describe('delegation on, no member runs DNS on the port', () => {
  it('short names are still aliases, chased (no NS records); the long names answer', async () => {
    s = await start({ delegation: { enabled: true } }, live());
    const r = parse(await udpAsk(s.port, encodeQuery({ name: 'www.example.com.nyud.net' })));
    const target = 'www.example.com.l2.l1.l0.nyud.net';
    expect(r.answers).toEqual([
      expect.objectContaining({ type: TYPE.CNAME, domain: target }),
      expect.objectContaining({ type: TYPE.A, name: target }),
      expect.objectContaining({ type: TYPE.A, name: target }),
    ]);
    expect(r.authorities).toEqual([]);
    expect(lastDecision(s.server).detail).toContain('no nameserver member');
    expect(await resolver(s.port).resolve4('www.example.com.l2.l1.l0.nyud.net')).toHaveLength(2);
    // The sub-zones' NS fall back to the configured nameservers.
    expect(await resolver(s.port).resolveNs('l2.l1.l0.nyud.net')).toEqual(['ns1.nyud.net']);
  });
});

describe('delegation on, no live proxy: the alias, then what its target gets', () => {
  it('a CNAME chain to a legacy origin host, the origin address, SERVFAIL without records', async () => {
    s = await start({ delegation: { enabled: true } }, fleet().add(node(2), { live: false }));
    s.dir.setLive(node(1).id, false);
    const sub = 'l2.l1.l0.nyud.net';
    const chain = parse(
      await udpAsk(s.port, encodeQuery({ name: 'www.example.com.8080.nyud.net' })),
    );
    expect(chain.answers).toEqual([
      expect.objectContaining({
        type: TYPE.CNAME,
        name: 'www.example.com.8080.nyud.net',
        domain: `www.example.com.8080.${sub}`,
        ttl: 86400,
      }),
      expect.objectContaining({
        type: TYPE.CNAME,
        name: `www.example.com.8080.${sub}`,
        domain: 'www.example.com',
        ttl: 10,
      }),
    ]);
    expect(lastDecision(s.server)).toMatchObject({ method: 'no-proxy', cached: false });
    // Node's resolver follows the chain to the origin's address (an A for an IPv4 origin).
    expect(await resolver(s.port).resolve4('93.184.216.34.nyud.net')).toEqual(['93.184.216.34']);
    const ip = parse(await udpAsk(s.port, encodeQuery({ name: '93.184.216.34.nyud.net' })));
    expect(ip.answers.map((a) => [a.type, a.name])).toEqual([
      [TYPE.CNAME, '93.184.216.34.nyud.net'],
      [TYPE.A, `93.184.216.34.${sub}`],
    ]);
    // No AAAA for it: the alias and NODATA, with the sub-zone's SOA.
    const v6 = parse(
      await udpAsk(s.port, encodeQuery({ name: '93.184.216.34.nyud.net', type: 28 })),
    );
    expect(v6.answers.map((a) => a.type)).toEqual([TYPE.CNAME]);
    expect(v6.authorities).toEqual([expect.objectContaining({ type: TYPE.SOA, name: sub })]);
    // One-label names: SERVFAIL, and no alias either (a SERVFAIL carries no records).
    const one = await udpAsk(s.port, encodeQuery({ name: 'www-example-com.nyud.net' }));
    expect(header(one)).toMatchObject({ rcode: 2, aa: false, an: 0, ns: 0 });
  });
});
