/**
 * Answer templates: encoded once without the question, instantiated per query. Checked against
 * dns2's parser (written independently of src/) on fixed and random responses, for questions of
 * every length and case, with and without the leading CNAME.
 */
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { decodeQuery } from '../../src/index.js';
import { ANSWER, BodyWriter, instantiate, type Owner } from '../../src/wire/template.js';
import { encodeQuery, header, parse, questionName } from '../helpers.js';

function query(name: string, spec: Parameters<typeof encodeQuery>[0] = { name }) {
  const msg = encodeQuery({ ...spec, name });
  const d = decodeQuery(msg);
  if (!d.ok) throw new Error(d.reason);
  return { msg, q: d.query };
}

describe('templates', () => {
  it('one template answers names of any length; owners point at the question, names at its zone', () => {
    const w = new BodyWriter('nyud.net');
    w.a('an', ANSWER, 30, '10.0.0.1');
    w.a('an', ANSWER, 30, '10.0.0.2');
    w.soa('ns', 'nyud.net', 60, {
      mname: 'ns1.nyud.net',
      rname: 'hostmaster.nyud.net',
      serial: 7,
      refresh: 1,
      retry: 2,
      expire: 3,
      minimum: 4,
    });
    w.opt({ udpSize: 1232, dnssecOk: true }, 0);
    const t = w.finish(true, 0);
    for (const name of ['a.b.nyud.net', 'WwW.Some-Long.Example.COM.8080.NYUD.net']) {
      const { msg, q } = query(name, { name, id: 0x4242, rd: true, edns: {} });
      const out = instantiate(t, msg, q);
      expect(header(out)).toMatchObject({
        id: 0x4242,
        qr: true,
        aa: true,
        rd: true,
        an: 2,
        ns: 1,
        ar: 1,
      });
      expect(questionName(out)).toBe(name);
      const p = parse(out);
      expect(p.answers.map((a) => [a.name, a.address, a.ttl])).toEqual([
        [name, '10.0.0.1', 30],
        [name, '10.0.0.2', 30],
      ]);
      expect(p.authorities[0]).toMatchObject({
        name: name.slice(-8), // the zone, as the question spelled it
        primary: `ns1.${name.slice(-8)}`,
        admin: `hostmaster.${name.slice(-8)}`,
        serial: 7,
        minimum: 4,
      });
      // The owners of the answers are pointers to offset 12.
      const first = 12 + (q.questionEnd - q.questionStart);
      expect([out[first], out[first + 1]]).toEqual([0xc0, 12]);
    }
  });

  it('a CNAME into a sub-zone is written from the question’s own labels', () => {
    const w = new BodyWriter('nyud.net');
    w.a('an', ANSWER, 60, '10.0.0.1');
    w.ns('ns', 'l2.l1.l0.nyud.net', 86400, `ns${'a'.repeat(40)}.l2.l1.l0.nyud.net`);
    w.a('ar', `ns${'a'.repeat(40)}.l2.l1.l0.nyud.net`, 86400, '127.0.0.9');
    const t = w.finish(true, 0, { ttl: 86400, sub: ['l2', 'l1', 'l0'] });
    const name = 'Www.Example.com.NYUD.net';
    const { msg, q } = query(name);
    const p = parse(instantiate(t, msg, q));
    expect(p.answers).toEqual([
      expect.objectContaining({
        name,
        type: 5,
        ttl: 86400,
        domain: 'Www.Example.com.l2.l1.l0.NYUD.net',
      }),
      expect.objectContaining({
        name: 'Www.Example.com.l2.l1.l0.NYUD.net',
        type: 1,
        address: '10.0.0.1',
      }),
    ]);
    expect(p.authorities[0]).toMatchObject({
      name: 'l2.l1.l0.NYUD.net',
      ns: `ns${'a'.repeat(40)}.l2.l1.l0.NYUD.net`,
    });
    expect(p.additionals[0]).toMatchObject({
      name: `ns${'a'.repeat(40)}.l2.l1.l0.NYUD.net`,
      address: '127.0.0.9',
    });
  });

  it('2,000 random templates decode to what was written, for random questions', () => {
    const rnd = new SeededRandom(11);
    const label = () => {
      const chars = 'abcdefghijklmnopqrstuvwxyz0123456789-_';
      let s = '';
      for (let i = 0, n = 1 + rnd.int(12); i < n; i++) s += chars[rnd.int(chars.length)];
      return s;
    };
    const under = (zone: string) => [...Array.from({ length: rnd.int(4) }, label), zone].join('.');
    const ip4 = () => Array.from({ length: 4 }, () => rnd.int(256)).join('.');
    const ip6 = () => Array.from({ length: 8 }, () => rnd.int(0x10000).toString(16)).join(':');
    const upper = (s: string) => [...s].map((ch) => (rnd.int(2) ? ch.toUpperCase() : ch)).join('');
    for (let i = 0; i < 2000; i++) {
      const zone = rnd.int(4) === 0 ? 'cdn.example.org' : 'nyud.net';
      const w = new BodyWriter(zone);
      const want: { section: 'an' | 'ns' | 'ar'; owner: Owner; type: number; value: unknown }[] =
        [];
      for (const section of ['an', 'ns', 'ar'] as const) {
        for (let k = rnd.int(4); k > 0; k--) {
          const owner: Owner = rnd.int(2) ? ANSWER : under(rnd.int(3) ? zone : 'example.com');
          const ttl = rnd.int(0x7fffffff);
          switch (rnd.int(5)) {
            case 0: {
              const v = ip4();
              w.a(section, owner, ttl, v);
              want.push({ section, owner, type: 1, value: v });
              break;
            }
            case 1: {
              const v = ip6();
              w.aaaa(section, owner, ttl, v);
              want.push({ section, owner, type: 28, value: v });
              break;
            }
            case 2: {
              const v = under(rnd.int(2) ? zone : 'example.com');
              w.ns(section, owner, ttl, v);
              want.push({ section, owner, type: 2, value: v });
              break;
            }
            case 3: {
              const v = under(zone);
              w.cname(section, owner, ttl, v);
              want.push({ section, owner, type: 5, value: v });
              break;
            }
            default: {
              const v = label().repeat(1 + rnd.int(10));
              w.txt(section, owner, ttl, v);
              want.push({ section, owner, type: 16, value: v });
            }
          }
        }
      }
      const withOpt = rnd.int(2) === 1;
      if (withOpt) {
        w.opt(
          {
            udpSize: 1232,
            dnssecOk: rnd.int(2) === 1,
            ...(rnd.int(2)
              ? {
                  ecs: {
                    family: 1,
                    sourcePrefix: 24,
                    scopePrefix: rnd.int(25),
                    address: new Uint8Array([198, 51, 100, 0]),
                  },
                }
              : {}),
          },
          0,
        );
      }
      const alias = rnd.int(3) === 0 ? { ttl: 5, sub: ['l1', 'l0'] } : undefined;
      const t = w.finish(true, 0, alias);
      const qname = upper([...Array.from({ length: 1 + rnd.int(5) }, label), zone].join('.'));
      const { msg, q } = query(qname);
      const out = instantiate(t, msg, q);
      const p = parse(out);
      const answerName = alias
        ? `${qname.slice(0, qname.length - zone.length)}l1.l0.${qname.slice(-zone.length)}`
        : qname;
      const records = [
        ...p.answers.slice(alias ? 1 : 0).map((r) => ({ section: 'an', r })),
        ...p.authorities.map((r) => ({ section: 'ns', r })),
        ...p.additionals.filter((r) => r.type !== 41).map((r) => ({ section: 'ar', r })),
      ];
      if (alias) expect(p.answers[0]).toMatchObject({ type: 5, name: qname, domain: answerName });
      expect(records.length, `template ${i}`).toBe(want.length);
      records.forEach(({ section, r }, k) => {
        const x = want[k]!;
        expect(section).toBe(x.section);
        expect(r.name.toLowerCase()).toBe(
          (x.owner === ANSWER ? answerName : x.owner).toLowerCase(),
        );
        expect(r.type).toBe(x.type);
        const value =
          x.type === 1 || x.type === 28
            ? r.address
            : x.type === 2
              ? r.ns
              : x.type === 5
                ? r.domain
                : r.data;
        if (x.type === 28)
          expect(value).toBe(new URL(`http://[${String(x.value)}]`).hostname.slice(1, -1));
        else expect(String(value).toLowerCase()).toBe(String(x.value).toLowerCase());
      });
      expect(p.additionals.some((r) => r.type === 41)).toBe(withOpt);
    }
  });
});
