/**
 * The server over real UDP and TCP on loopback, queried by Node's own stub resolver (c-ares) and
 * by raw packets built by hand (decoded with dns2's parser, independent of the server's code).
 */
import dgram from 'node:dgram';
import dns from 'node:dns';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DnsServer, TYPE } from '../../src/index.js';
import {
  ecsOf,
  encodeQuery,
  fleet,
  frame,
  header,
  node,
  parse,
  questionName,
  tcpAsk,
  tcpConnect,
  udpAsk,
  waitFor,
} from '../helpers.js';
import { gateHints, lastDecision, resolver, start, type Started } from './support.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const NAME = 'www.example.com.nyud.net';

describe('answers over UDP with Node’s stub resolver', () => {
  it('A: two live proxies, TTL 30 s', async () => {
    const dir = fleet().add(node(2)).add(node(3)).add(node(4), { live: false });
    s = await start({}, dir);
    const got = await resolver(s.port).resolve4(NAME, { ttl: true });
    expect(got).toHaveLength(2);
    for (const a of got) {
      expect(['10.0.0.1', '10.0.0.2', '10.0.0.3']).toContain(a.address);
      expect(a.ttl).toBe(30);
    }
    expect(new Set(got.map((a) => a.address)).size).toBe(2);
  });

  it('answerCount is configurable', async () => {
    const dir = fleet().add(node(2)).add(node(3)).add(node(4));
    s = await start({ answerCount: 3 }, dir);
    expect(await resolver(s.port).resolve4(NAME)).toHaveLength(3);
  });

  it('port labels: www.example.com.8080.nyud.net is served like its origin', async () => {
    s = await start({}, fleet().add(node(2)));
    expect((await resolver(s.port).resolve4('www.example.com.8080.nyud.net')).length).toBe(2);
    expect(lastDecision(s.server).name).toBe('www.example.com.8080.nyud.net');
    // An impossible port is NXDOMAIN.
    await expect(resolver(s.port).resolve4('www.example.com.99999.nyud.net')).rejects.toMatchObject(
      {
        code: 'ENOTFOUND',
      },
    );
  });

  it('AAAA when proxies have IPv6; NOERROR/empty when none has', async () => {
    const dir = fleet().add(node(2, { ipv6: '2001:db8::2' }));
    s = await start({}, dir);
    expect(await resolver(s.port).resolve6(NAME)).toEqual(['2001:db8::2']);
    await s.server.close();
    s = await start({}, fleet().add(node(2)));
    await expect(resolver(s.port).resolve6(NAME)).rejects.toMatchObject({ code: 'ENODATA' });
  });

  it('apex SOA and NS', async () => {
    s = await start({ soa: { serial: 2026112901 } });
    expect(await resolver(s.port).resolveSoa('nyud.net')).toEqual({
      nsname: 'ns1.nyud.net',
      hostmaster: 'hostmaster.nyud.net',
      serial: 2026112901,
      refresh: 3600,
      retry: 600,
      expire: 604800,
      minttl: 60,
    });
    expect(await resolver(s.port).resolveNs('nyud.net')).toEqual(['ns1.nyud.net']);
    expect(await resolver(s.port).resolve4('ns1.nyud.net')).toEqual(['192.0.2.53']);
    expect(await resolver(s.port).resolve6('ns1.nyud.net')).toEqual(['2001:db8::53']);
  });

  it('NXDOMAIN in the zone, REFUSED outside, NOERROR/empty for other types', async () => {
    s = await start();
    await expect(resolver(s.port).resolve4('foo.nyud.net')).rejects.toMatchObject({
      code: 'ENOTFOUND',
    });
    await expect(resolver(s.port).resolve4('www.example.org')).rejects.toMatchObject({
      code: 'EREFUSED',
    });
    await expect(resolver(s.port).resolveMx(NAME)).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(resolver(s.port).resolveTxt('nyud.net')).rejects.toMatchObject({
      code: 'ENODATA',
    });
  });

  it('no live proxy: a CNAME to the origin host', async () => {
    s = await start({}, fleet().add(node(2), { live: false }));
    s.dir.setLive(node(1).id, false);
    expect(await resolver(s.port).resolveCname('www.example.com.8080.nyud.net')).toEqual([
      'www.example.com',
    ]);
    expect(lastDecision(s.server)).toMatchObject({ method: 'no-proxy', nodes: [] });
  });
});

describe('answers over UDP with raw packets', () => {
  it('A: authoritative, id and RD echoed, no authority needed', async () => {
    s = await start({}, fleet().add(node(2)));
    const r = await udpAsk(s.port, encodeQuery({ name: NAME, id: 4321, rd: true }));
    expect(header(r)).toMatchObject({
      id: 4321,
      qr: true,
      aa: true,
      tc: false,
      rd: true,
      rcode: 0,
      qd: 1,
      an: 2,
    });
    const p = parse(r);
    expect(p.answers.map((a) => a.type)).toEqual([1, 1]);
    expect(p.answers.every((a) => a.ttl === 30)).toBe(true);
  });

  it('a burst from several sources is answered whole: every query once, to its own sender', async () => {
    // Answers read in one turn of the event loop are sent together after it (udp.ts): none may be
    // lost, duplicated or sent to another client, whether cached, built or malformed.
    s = await start({}, fleet().add(node(2)));
    const socks = await Promise.all(
      ['127.0.0.1', '127.0.0.2', '127.0.0.3'].map(async (from) => {
        const sock = dgram.createSocket('udp4');
        await new Promise<void>((r) => sock.bind(0, from, () => r()));
        const got: Buffer[] = [];
        sock.on('message', (m) => got.push(m));
        return { sock, got };
      }),
    );
    const perSocket = 40;
    for (let i = 0; i < perSocket; i++) {
      for (const [k, { sock }] of socks.entries()) {
        const id = k * 1000 + i;
        // Every fifth query is malformed (FORMERR, the id kept); new names miss the cache.
        const q =
          i % 5 === 4
            ? encodeQuery({ name: NAME, id }).subarray(0, 20)
            : encodeQuery({ name: `www.n${i}.example.com.nyud.net`, id });
        sock.send(q, s.port, '127.0.0.1');
      }
    }
    await waitFor(() => socks.every((x) => x.got.length >= perSocket));
    for (const [k, { sock, got }] of socks.entries()) {
      expect(got.map((m) => header(m).id).sort((a, b) => a - b)).toEqual(
        Array.from({ length: perSocket }, (_, i) => k * 1000 + i),
      );
      for (const m of got) {
        const h = header(m);
        expect(h.rcode, String(h.id)).toBe(h.id % 5 === 4 ? 1 : 0);
      }
      sock.close();
    }
  });

  it('0x20: the question is echoed exactly as sent, also when served from the cache', async () => {
    s = await start({}, fleet().add(node(2)));
    const a = await udpAsk(s.port, encodeQuery({ name: 'wWw.ExAmPlE.cOm.NyUd.NeT', id: 1 }));
    expect(questionName(a)).toBe('wWw.ExAmPlE.cOm.NyUd.NeT');
    const b = await udpAsk(s.port, encodeQuery({ name: 'WWW.example.COM.nyud.NET', id: 2 }));
    expect(questionName(b)).toBe('WWW.example.COM.nyud.NET');
    expect(header(b)).toMatchObject({ id: 2, an: 2 });
    expect(s.server.stats().cache.hits).toBe(1);
    expect(lastDecision(s.server).cached).toBe(true);
    // Same records both times (the cached answer), only id and case differ.
    expect(parse(b).answers.map((x) => x.address)).toEqual(parse(a).answers.map((x) => x.address));
  });

  it('the answer cache keeps apart what changes the bytes: type, class, EDNS, DO, ECS', async () => {
    s = await start({}, fleet().add(node(2)).add(node(3)));
    const variants: Parameters<typeof encodeQuery>[0][] = [
      { name: NAME },
      { name: NAME, type: TYPE.AAAA },
      { name: NAME, qclass: 255 },
      { name: NAME, edns: { udpSize: 1232 } },
      { name: NAME, edns: { udpSize: 1232, dnssecOk: true } },
      { name: NAME, edns: { udpSize: 1232, ecs: { sourcePrefix: 24, address: [198, 51, 100] } } },
      { name: NAME, edns: { udpSize: 1232, ecs: { sourcePrefix: 24, address: [203, 0, 113] } } },
    ];
    const first: Buffer[] = [];
    for (const [i, v] of variants.entries())
      first.push(await udpAsk(s.port, encodeQuery({ ...v, id: i })));
    expect(s.server.stats().cache).toMatchObject({ hits: 0, misses: variants.length });
    for (const [i, v] of variants.entries()) {
      const again = await udpAsk(s.port, encodeQuery({ ...v, id: i }));
      expect(lastDecision(s.server).cached).toBe(true);
      expect(again.equals(first[i]!)).toBe(true); // same id, same question: the same bytes
    }
    expect(s.server.stats().cache).toMatchObject({
      hits: variants.length,
      misses: variants.length,
    });
    // And each variant got its own kind of answer.
    const opt = (b: Buffer) => parse(b).additionals.find((r) => r.type === 41);
    expect(opt(first[0]!)).toBeUndefined();
    expect(opt(first[3]!)!.ttl & 0x8000).toBe(0);
    expect(opt(first[4]!)!.ttl & 0x8000).toBe(0x8000); // DO echoed (RFC 3225)
    expect(ecsOf(parse(first[5]!))).toMatchObject({ ip: '198.51.100.0', sourcePrefixLength: 24 });
    expect(ecsOf(parse(first[6]!))).toMatchObject({ ip: '203.0.113.0', sourcePrefixLength: 24 });
    expect(parse(first[1]!).answers.map((a) => a.type)).not.toContain(1);
  });

  it('two ECS subnets in one view share a location bucket but not a cached answer', async () => {
    const dir = fleet().add(node(2)).add(node(3));
    s = await start({ views: [{ cidr: '198.51.0.0/16', nodes: [node(2).id, node(3).id] }] }, dir);
    const ask = (address: number[]) =>
      udpAsk(
        s!.port,
        encodeQuery({ name: NAME, edns: { udpSize: 1232, ecs: { sourcePrefix: 24, address } } }),
      );
    const a = parse(await ask([198, 51, 100]));
    const b = parse(await ask([198, 51, 7]));
    expect(s.server.stats().cache).toMatchObject({ hits: 0, misses: 2 });
    expect(ecsOf(a)).toMatchObject({ ip: '198.51.100.0', scopePrefixLength: 16 });
    expect(ecsOf(b)).toMatchObject({ ip: '198.51.7.0', scopePrefixLength: 16 });
    expect(parse(await ask([198, 51, 7])).answers).toEqual(b.answers);
    expect(s.server.stats().cache).toMatchObject({ hits: 1, misses: 2 });
  });

  it('apex NS carries glue with long TTLs; SOA TTL is long too', async () => {
    s = await start({
      nameservers: [
        { name: 'ns1.nyud.net', ipv4: '192.0.2.1' },
        { name: 'ns2.nyud.net', ipv4: '192.0.2.2', ipv6: '2001:db8::2' },
      ],
    });
    const r = parse(await udpAsk(s.port, encodeQuery({ name: 'nyud.net', type: TYPE.NS })));
    expect(r.answers.map((a) => a.ns).sort()).toEqual(['ns1.nyud.net', 'ns2.nyud.net']);
    expect(r.answers.every((a) => a.ttl === 86400)).toBe(true);
    const glue = r.additionals.filter((a) => a.type === 1 || a.type === 28);
    expect(glue.map((g) => `${g.name} ${g.address}`).sort()).toEqual([
      'ns1.nyud.net 192.0.2.1',
      'ns2.nyud.net 192.0.2.2',
      'ns2.nyud.net 2001:db8::2',
    ]);
    expect(glue.every((g) => g.ttl === 86400)).toBe(true);
    const soa = parse(await udpAsk(s.port, encodeQuery({ name: 'NYUD.net', type: TYPE.SOA })));
    expect(soa.answers[0]).toMatchObject({ type: 6, ttl: 3600 });
    // Names in RDATA are compressed against the question, so they follow its case (DNS names
    // are case-insensitive).
    expect(soa.answers[0]!.primary!.toLowerCase()).toBe('ns1.nyud.net');
  });

  it('NXDOMAIN and NODATA carry the SOA (negative TTL); REFUSED is not authoritative', async () => {
    s = await start();
    const nx = await udpAsk(s.port, encodeQuery({ name: 'foo.nyud.net' }));
    expect(header(nx)).toMatchObject({ rcode: 3, aa: true, an: 0, ns: 1 });
    expect(parse(nx).authorities[0]).toMatchObject({ type: 6, name: 'nyud.net', ttl: 60 });
    const nodata = await udpAsk(s.port, encodeQuery({ name: NAME, type: 16 }));
    expect(header(nodata)).toMatchObject({ rcode: 0, aa: true, an: 0, ns: 1 });
    const refused = await udpAsk(s.port, encodeQuery({ name: 'www.example.org', id: 77 }));
    expect(header(refused)).toMatchObject({ id: 77, rcode: 5, aa: false, an: 0, qd: 1 });
    expect(questionName(refused)).toBe('www.example.org');
    const chaos = await udpAsk(s.port, encodeQuery({ name: 'version.bind', type: 16, qclass: 3 }));
    expect(header(chaos).rcode).toBe(5);
    const axfr = await tcpAsk(s.port, [encodeQuery({ name: 'nyud.net', type: TYPE.AXFR })]);
    expect(header(axfr[0]!).rcode).toBe(5);
  });

  it('a name with a dot inside a label cannot pose as a Coralized name', async () => {
    s = await start({}, fleet().add(node(2)));
    const msg = Buffer.concat([
      Buffer.from([0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
      Buffer.from([15]),
      Buffer.from('www.example.com', 'latin1'),
      Buffer.from([4]),
      Buffer.from('nyud'),
      Buffer.from([3]),
      Buffer.from('net'),
      Buffer.from([0, 0, 1, 0, 1]),
    ]);
    const r = await udpAsk(s.port, msg);
    expect(header(r)).toMatchObject({ id: 9, rcode: 3, an: 0 });
    expect(r.subarray(12, 12 + 26).equals(msg.subarray(12, 12 + 26))).toBe(true);
  });

  it('ECS: used, echoed with source prefix and a scope prefix', async () => {
    const dir = fleet()
      .add(node(2))
      .add(node(5), { hints: ['198.51.100.0/24'] });
    s = await start({}, dir);
    const r = await udpAsk(
      s.port,
      encodeQuery({ name: NAME, edns: { ecs: { sourcePrefix: 24, address: [198, 51, 100] } } }),
    );
    const p = parse(r);
    expect(p.answers.map((a) => a.address)).toEqual(['10.0.0.5']);
    expect(ecsOf(p)).toMatchObject({
      sourcePrefixLength: 24,
      scopePrefixLength: 24,
      ip: '198.51.100.0',
    });
    expect(lastDecision(s.server)).toMatchObject({
      method: 'ecs',
      scope: 24,
      ecs: '198.51.100.0/24',
    });
    // ECS with source prefix 0 (client opted out): echoed with scope 0, not used.
    const z = parse(
      await udpAsk(
        s.port,
        encodeQuery({ name: NAME, edns: { ecs: { sourcePrefix: 0, address: [] } } }),
      ),
    );
    expect(ecsOf(z)).toMatchObject({ sourcePrefixLength: 0, scopePrefixLength: 0 });
    expect(lastDecision(s.server).method).not.toBe('ecs');
    // An ECS subnet without hints falls through, echoed with scope 0.
    const n = parse(
      await udpAsk(
        s.port,
        encodeQuery({ name: NAME, edns: { ecs: { sourcePrefix: 24, address: [192, 0, 2] } } }),
      ),
    );
    expect(ecsOf(n)).toMatchObject({ sourcePrefixLength: 24, scopePrefixLength: 0 });
  });

  it('malformed packets: FORMERR when the header is readable, dropped otherwise; NOTIMP; BADVERS', async () => {
    s = await start();
    const trunc = encodeQuery({ name: NAME, id: 999 }).subarray(0, 20);
    expect(header(await udpAsk(s.port, trunc))).toMatchObject({
      id: 999,
      qr: true,
      rcode: 1,
      qd: 0,
    });
    const notimp = await udpAsk(s.port, encodeQuery({ name: NAME, opcode: 2, id: 5 }));
    expect(header(notimp)).toMatchObject({ id: 5, rcode: 4 });
    const badvers = await udpAsk(s.port, encodeQuery({ name: NAME, edns: { version: 1 } }));
    expect(header(badvers)).toMatchObject({ rcode: 0, ar: 1 });
    const optTtlHigh = badvers[badvers.length - 6]!; // extended rcode byte of the OPT TTL
    expect(optTtlHigh).toBe(1); // BADVERS = 16 = (1 << 4) | 0
    const before = s.server.stats().dropped;
    const sock = dgram.createSocket('udp4');
    sock.send(Buffer.from([1, 2, 3]), s.port, '127.0.0.1');
    await waitFor(() => s!.server.stats().dropped === before + 1);
    sock.close();
  });
});

describe('truncation and TCP', () => {
  async function big() {
    const dir = fleet();
    for (let i = 2; i <= 100; i++) dir.add(node(i));
    return start({ answerCount: 100 }, dir);
  }

  it('an answer over the client’s UDP limit is truncated (TC) and served in full over TCP', async () => {
    s = await big();
    const udp = await udpAsk(s.port, encodeQuery({ name: NAME, id: 3 }));
    expect(header(udp)).toMatchObject({ id: 3, tc: true, an: 0, qd: 1 });
    expect(udp.length).toBeLessThanOrEqual(512);
    const withEdns = await udpAsk(s.port, encodeQuery({ name: NAME, edns: { udpSize: 4096 } }));
    expect(header(withEdns)).toMatchObject({ tc: true, an: 0 }); // above our 1232-byte cap
    const [tcp] = await tcpAsk(s.port, [encodeQuery({ name: NAME, id: 4 })]);
    expect(header(tcp!)).toMatchObject({ id: 4, tc: false, an: 100 });
    expect(s.server.stats().truncated).toBe(2);
  });

  it('Node’s stub resolver falls back to TCP on TC and gets every address', async () => {
    s = await big();
    const got = await resolver(s.port).resolve4(NAME);
    expect(got).toHaveLength(100);
    expect(s.server.stats().queries.tcp).toBeGreaterThanOrEqual(1);
  });

  it('pipelined queries on one connection are all answered', async () => {
    s = await start({}, fleet().add(node(2)));
    const answers = await tcpAsk(s.port, [
      encodeQuery({ name: NAME, id: 10 }),
      encodeQuery({ name: 'nyud.net', type: TYPE.SOA, id: 11 }),
      encodeQuery({ name: 'x.example.org', id: 12 }),
    ]);
    expect(answers.map((a) => [header(a).id, header(a).rcode]).sort()).toEqual([
      [10, 0],
      [11, 0],
      [12, 5],
    ]);
  });

  it('a client that half-closes right after its query still gets the answer', async () => {
    // The directory answers only when the test says so: the answer is built after the FIN.
    const dir = fleet().add(node(2));
    const release = gateHints(dir);
    s = await start({ hintTimeoutMs: 60_000 }, dir);
    const sock = await tcpConnect(s.port);
    const chunks: Buffer[] = [];
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.end(frame(encodeQuery({ name: 'www.half-close.com.nyud.net', id: 42 }))); // query + FIN
    await waitFor(() => s!.server.stats().queries.tcp === 1);
    await new Promise((r) => setTimeout(r, 20)); // let the FIN reach the server first
    release();
    await new Promise((r) => sock.once('close', r));
    const all = Buffer.concat(chunks);
    expect(all.readUInt16BE(0)).toBe(all.length - 2);
    expect(header(all.subarray(2))).toMatchObject({ id: 42, an: 2 });
  });

  it('TCP limits: a full table gives way to a newcomer by closing its idlest connection', async () => {
    // The directory answers hints only when the test says so: a query can be kept pending.
    const dir = fleet().add(node(2));
    const release = gateHints(dir);
    s = await start({ tcp: { maxConnections: 2 }, hintTimeoutMs: 60_000 }, dir);
    const connect = () => tcpConnect(s!.port);
    // a: answered, then idle. b: owed an answer (its query waits on the hint gate).
    const a = await connect();
    const aAnswer = new Promise<Buffer>((r) => a.once('data', (c: Buffer) => r(c)));
    a.write(frame(encodeQuery({ name: 'nyud.net', type: TYPE.SOA, id: 31 })));
    expect(header((await aAnswer).subarray(2))).toMatchObject({ id: 31, an: 1 });
    const b = await connect();
    const bAnswer = new Promise<Buffer>((r) => b.once('data', (c: Buffer) => r(c)));
    b.write(frame(encodeQuery({ name: 'www.pending.com.nyud.net', id: 32 })));
    await waitFor(() => s!.server.stats().queries.tcp === 2);

    // c: the table is full; a (idle) gives way, b (owed an answer) does not.
    const aClosed = new Promise((r) => a.once('close', r));
    const c = await connect();
    await aClosed;
    expect(s.server.stats().tcp).toMatchObject({ open: 2, evicted: 1, rejected: 0 });
    // d: now both connections are owed answers (c's query waits too): d is closed on arrival.
    c.write(frame(encodeQuery({ name: 'www.pending2.com.nyud.net', id: 33 })));
    await waitFor(() => s!.server.stats().queries.tcp === 3);
    const d = net.connect({ port: s.port, host: '127.0.0.1' });
    d.on('error', () => {});
    await new Promise((r) => d.once('close', r));
    expect(s.server.stats().tcp).toMatchObject({ open: 2, evicted: 1, rejected: 1 });
    release();
    expect(header((await bAnswer).subarray(2))).toMatchObject({ id: 32, an: 2 });
    b.destroy();
    c.destroy();
  });

  it('TCP limits: an oversized length prefix and an idle connection are closed', async () => {
    s = await start({ tcp: { maxMessageBytes: 512, idleTimeoutMs: 5000 } });
    const closed = (sock: net.Socket) => new Promise<void>((r) => sock.once('close', () => r()));
    const a = net.connect({ port: s.port, host: '127.0.0.1' });
    a.on('error', () => {});
    await new Promise((r) => a.once('connect', r));
    const aClosed = closed(a);
    a.write(Buffer.from([0x10, 0x00])); // 4096 > 512
    await aClosed;
    expect(s.server.stats().tcp.oversize).toBe(1);

    const b = net.connect({ port: s.port, host: '127.0.0.1' });
    b.on('error', () => {});
    await new Promise((r) => b.once('connect', r));
    const bClosed = closed(b);
    await waitFor(() => s!.server.stats().tcp.open === 1);
    // Trickled bytes of an incomplete query are not activity.
    b.write(Buffer.from([0x00]));
    await s.clock.advance(4000);
    b.write(Buffer.from([0x20, 0x01]));
    await s.clock.advance(1000);
    await bClosed;
    expect(s.server.stats().tcp.idleClosed).toBe(1);
  });
});

describe('views, health, admin views', () => {
  it('a view (CIDR → region) answers with that region’s proxies', async () => {
    const dir = fleet()
      .add(node(2, { region: 'cernet' }))
      .add(node(3, { region: 'cernet' }))
      .add(node(4, { region: 'telecom' }));
    s = await start({ views: [{ cidr: '127.0.0.0/8', region: 'cernet' }] }, dir);
    expect((await resolver(s.port).resolve4(NAME)).sort()).toEqual(['10.0.0.2', '10.0.0.3']);
    expect(lastDecision(s.server)).toMatchObject({ method: 'view' });
  });

  it('a view (CIDR → node ids) skips dead nodes', async () => {
    const dir = fleet().add(node(2)).add(node(3)).add(node(4));
    s = await start({ views: [{ cidr: '127.0.0.1/32', nodes: [node(3).id, node(4).id] }] }, dir);
    dir.setLive(node(4).id, false);
    expect(await resolver(s.port).resolve4(NAME)).toEqual(['10.0.0.3']);
  });

  it('a rebuilt answer replaces the cached one; earlier decisions keep what they said', async () => {
    const dir = fleet().add(node(2)).add(node(3), { live: false });
    s = await start({ views: [{ cidr: '127.0.0.1/32', nodes: [node(2).id, node(3).id] }] }, dir);
    const ask = async (id: number) => udpAsk(s!.port, encodeQuery({ name: NAME, id }));
    const addresses = (b: Buffer) => parse(b).answers.map((a) => a.address);
    expect(addresses(await ask(1))).toEqual(['10.0.0.2']);
    // The cached answer names a proxy that died: rebuilt (same length: updated in place).
    dir.setLive(node(3).id, true);
    dir.setLive(node(2).id, false);
    const rebuilt = await ask(2);
    expect(addresses(rebuilt)).toEqual(['10.0.0.3']);
    expect(lastDecision(s.server).cached).toBe(false);
    // Served from the cache from now on, the new answer byte for byte.
    const again = await ask(2);
    expect(lastDecision(s.server).cached).toBe(true);
    expect(again.equals(rebuilt)).toBe(true);
    // A rebuild to a different length (no proxy in the view: another one) replaces the bytes.
    dir.setLive(node(3).id, false);
    dir.add(node(4)).add(node(5));
    const other = await ask(3);
    expect(parse(other).answers.length).toBeGreaterThan(0);
    expect(addresses(other)).not.toContain('10.0.0.3');
    expect((await ask(3)).equals(other)).toBe(true);
    const nodes = s.server.recentDecisions().map((d) => d.nodes);
    expect(nodes[0]).toEqual([node(2).id]);
    expect(nodes[1]).toEqual([node(3).id]);
  });

  it('a proxy that dies is not served from the answer cache', async () => {
    const dir = fleet().add(node(2));
    s = await start({}, dir);
    const first = parse(await udpAsk(s.port, encodeQuery({ name: NAME })));
    expect(first.answers.map((a) => a.address).sort()).toEqual(['10.0.0.1', '10.0.0.2']);
    dir.setLive(node(2).id, false);
    const second = parse(await udpAsk(s.port, encodeQuery({ name: NAME })));
    expect(second.answers.map((a) => a.address)).toEqual(['10.0.0.1']);
  });

  it('recentDecisions, probeCache and stats describe what happened', async () => {
    s = await start({ decisionBufferSize: 3 }, fleet().add(node(2)));
    for (let i = 0; i < 5; i++)
      await udpAsk(s.port, encodeQuery({ name: `www.e${i}.com.nyud.net` }));
    const d = s.server.recentDecisions();
    expect(d.map((x) => x.name)).toEqual([
      'www.e2.com.nyud.net',
      'www.e3.com.nyud.net',
      'www.e4.com.nyud.net',
    ]);
    expect(d[0]).toMatchObject({
      transport: 'udp',
      client: '127.0.0.1',
      rcode: 'NOERROR',
      outcome: 'sent',
    });
    expect(s.server.probeCache()).toEqual([
      { prefix: '127.0.0.0/24', target: '127.0.0.1', inFlight: true },
    ]);
    expect(s.prober.calls).toEqual(['127.0.0.1']); // one probe in flight per /24, not five
    expect(s.server.stats()).toMatchObject({
      queries: { udp: 5 },
      responses: 5,
      rcodes: { NOERROR: 5 },
    });
  });

  it('the reason goes to the metrics hook and the log', async () => {
    const answers: string[] = [];
    let limited = 0;
    const logs: Record<string, unknown>[] = [];
    const log = (o: object) => logs.push(o as Record<string, unknown>);
    s = await start(
      { rrl: { responsesPerSecond: 1, slip: 0 } },
      fleet().add(node(2), { hints: ['127.0.0.0/24'] }),
      {
        metrics: { answer: (m, r) => answers.push(`${m}/${r}`), rateLimited: () => limited++ },
        logger: { debug: log, info: log, warn: log, error: log },
      },
    );
    await udpAsk(s.port, encodeQuery({ name: NAME }));
    await udpAsk(s.port, encodeQuery({ name: 'nyud.net', type: TYPE.SOA }));
    await udpAsk(s.port, encodeQuery({ name: 'www.example.org' }));
    expect(answers).toEqual(['hint/NOERROR', 'none/NOERROR', 'none/REFUSED']);
    expect(logs.find((l) => l.method === 'hint')).toMatchObject({
      name: NAME,
      reason: expect.stringMatching(/hint \/24/),
    });
    await s.server.handlePacket(encodeQuery({ name: 'www.example.org' }), {
      address: '127.0.0.1',
      port: 1,
    });
    expect(limited).toBe(1);
  });

  it('listens on IPv6 loopback too', async () => {
    const dir = fleet().add(node(2, { ipv6: '2001:db8::2' }));
    const server = new DnsServer({ directory: dir }, { probe: { enabled: false } });
    const { port, host } = await server.listen({ port: 0, host: '::1' });
    expect(host).toBe('::1');
    try {
      const r = new dns.promises.Resolver({ timeout: 3000, tries: 2 });
      r.setServers([`[::1]:${port}`]);
      expect(await r.resolve6(NAME)).toEqual(['2001:db8::2']);
      expect(server.recentDecisions()[0]).toMatchObject({ client: '::1', method: 'random' });
      const [tcp] = await tcpAsk6(port, encodeQuery({ name: 'nyud.net', type: TYPE.SOA, id: 8 }));
      expect(header(tcp!)).toMatchObject({ id: 8, an: 1 });
    } finally {
      await server.close();
    }
  });

  it('a directory that throws gives SERVFAIL, not a crash', async () => {
    const dir = fleet();
    dir.random = () => {
      throw new Error('directory down');
    };
    s = await start({}, dir);
    const r = await udpAsk(s.port, encodeQuery({ name: NAME, id: 66 }));
    expect(header(r)).toMatchObject({ id: 66, rcode: 2, an: 0, qd: 1 });
    expect(s.server.stats().internalErrors).toBe(1);
    // The server goes on answering.
    expect(header(await udpAsk(s.port, encodeQuery({ name: 'nyud.net', type: TYPE.SOA }))).an).toBe(
      1,
    );
  });

  it('listen errors and bad options carry codes', async () => {
    s = await start();
    const other = new DnsServer({ directory: fleet() });
    await expect(other.listen({ port: s.port, host: '127.0.0.1' })).rejects.toMatchObject({
      code: 'DNS_ERR_LISTEN',
    });
    await expect(other.listen({ port: 0 })).rejects.toMatchObject({ code: 'DNS_ERR_STATE' });
    expect(
      () =>
        new DnsServer({ directory: fleet() }, { views: [{ cidr: '10.0.0.0/99', region: 'x' }] }),
    ).toThrow(expect.objectContaining({ code: 'DNS_ERR_CONFIG' }));
    expect(() => new DnsServer({ directory: fleet() }, { answerCount: 0 })).toThrow(
      expect.objectContaining({ code: 'DNS_ERR_CONFIG' }),
    );
    expect(
      () =>
        new DnsServer(
          { directory: fleet() },
          { nameservers: [{ name: 'ns1.nyud.net', ipv4: '1.2.3' }] },
        ),
    ).toThrow(expect.objectContaining({ code: 'DNS_ERR_CONFIG' }));
    // Limits: each bad one named in the message.
    for (const [options, name] of [
      [{ tcp: { maxConnectionsPerSource: 0 } }, 'tcp.maxConnectionsPerSource'],
      [{ tcp: { ipv6PrefixLength: 129 } }, 'tcp.ipv6PrefixLength'],
      [{ hints: { walksPerSecond: -1 } }, 'hints.walksPerSecond'],
      [{ probe: { maxPerSecond: Number.NaN } }, 'probe.maxPerSecond'],
      [{ answerCache: { maxBytes: 1.5 } }, 'answerCache.maxBytes'],
      [{ rrl: { slip: -2 } }, 'rrl.slip'],
      [{ hintTimeoutMs: -1 }, 'hintTimeoutMs'],
    ] as const) {
      expect(() => new DnsServer({ directory: fleet() }, options)).toThrow(
        expect.objectContaining({ code: 'DNS_ERR_CONFIG', message: expect.stringContaining(name) }),
      );
    }
    expect(
      () => new DnsServer({ directory: fleet() }, { hints: { walksPerSecond: 0.5 } }),
    ).not.toThrow();
  });
});

/** One length-prefixed exchange over TCP to [::1]. */
async function tcpAsk6(port: number, msg: Buffer): Promise<Buffer[]> {
  const sock = net.connect({ port, host: '::1' });
  const len = Buffer.alloc(2);
  len.writeUInt16BE(msg.length);
  sock.write(Buffer.concat([len, msg]));
  const chunks: Buffer[] = [];
  for await (const c of sock) {
    chunks.push(c as Buffer);
    const all = Buffer.concat(chunks);
    if (all.length >= 2 && all.length >= 2 + all.readUInt16BE(0)) {
      sock.destroy();
      return [all.subarray(2, 2 + all.readUInt16BE(0))];
    }
  }
  return [];
}
