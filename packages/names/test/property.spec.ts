// Property tests of the name codec (issue 11, Must show 1): seeded, so every run checks the same
// few thousand random origins; a failure prints the seed and the shrunk counterexample.
import { domainToASCII } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalHost,
  coralizeHost,
  isNamesError,
  parseCoralName,
  unicodeHost,
  type Origin,
} from '../src/index.js';
import { ampBody } from '../src/forms/one-label.js';

const Z = 'nyud.net';
const RUNS = { seed: 0x20c0a1, numRuns: 1500 };

// ---- arbitraries -----------------------------------------------------------------------------

const ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';
const char = (chars: string) => fc.constantFrom(...Array.from(chars));
/** A label of `start` chars with hyphen runs of every length and `_` inside. */
const labelOf = (chars: string) => {
  const edge = char(chars);
  const middle = fc.oneof(
    { weight: 6, arbitrary: edge },
    { weight: 1, arbitrary: char('0123456789') },
    { weight: 3, arbitrary: fc.constantFrom('-', '--', '---', '----', '-0-') },
    { weight: 1, arbitrary: fc.constant('_') },
  );
  return fc.oneof(
    edge,
    fc.tuple(edge, fc.array(middle, { maxLength: 8 }), edge).map(([a, m, b]) => a + m.join('') + b),
  );
};
const ascii = labelOf(ALNUM);
const scripts = [
  'abcxyzüéßàøåçñ', // Latin with diacritics (ß: a deviation character, kept nontransitionally)
  'αβγδεζηθλμ',
  'абвгдежзий',
  '點看例え中文字',
  '⚡😊🎉🚀', // astral code points: positions 3–4 must be counted in code points
  'אבגדהוזחט', // right to left
  'ابتثجحخدذ',
];
const idn = fc.constantFrom(...scripts).chain((s) => labelOf(s));
const label = fc.oneof({ weight: 3, arbitrary: ascii }, { weight: 2, arbitrary: idn });
const dnsHost = fc
  .tuple(fc.array(label, { minLength: 1, maxLength: 3 }), label)
  .map(([ls, tld]) => [...ls, tld].join('.'));
/** Hosts all in one right-to-left script, the only ones whose one label keeps the Bidi rule. */
const rtlHost = fc
  .constantFrom('אבגדהוזחט', 'ابتثجحخدذ')
  .chain((s) => fc.array(labelOf(s), { minLength: 2, maxLength: 3 }))
  .map((ls) => ls.join('.'));
/** Valid Coralizable hosts in canonical form (invalid draws, e.g. Bidi breaks, are dropped). */
const host = fc
  .oneof(
    { weight: 8, arbitrary: dnsHost },
    { weight: 1, arbitrary: rtlHost },
    { weight: 2, arbitrary: fc.ipV4() },
  )
  .map((h) => {
    try {
      return canonicalHost(h);
    } catch {
      return undefined;
    }
  })
  .filter((h): h is string => h !== undefined);
const port = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 1, max: 65535 }),
  fc.constantFrom(80, 443, 8080, 8443),
);
const origin: fc.Arbitrary<Origin> = fc
  .tuple(fc.constantFrom('http' as const, 'https' as const), host, port)
  .map(([scheme, h, p]) => ({
    scheme,
    host: h,
    port: p === 0 ? (scheme === 'http' ? 80 : 443) : p,
  }));

/** Codes that mean "this origin has no name in this form" (not a bug). */
const UNFIT = new Set([
  'NAMES_ERR_LABEL_TOO_LONG',
  'NAMES_ERR_LABEL_INVALID',
  'NAMES_ERR_NAME_TOO_LONG',
  'NAMES_ERR_BAD_IDN',
]);

function tryName(o: Origin, form: 'one-label' | 'legacy'): string | { code: string } {
  try {
    return coralizeHost(o, Z, { form });
  } catch (e) {
    if (isNamesError(e)) return { code: e.code };
    throw e;
  }
}

/**
 * An independent oracle for the one-label label: the AMP algorithm written from its
 * description, with Node's own IDNA (ada, WHATWG's flags) instead of tr46.
 */
function oracleLabel(o: Origin): string {
  const body = unicodeHost(o.host)
    .split('.')
    .map((l) => l.split('-').join('--'))
    .join('-');
  const cps = [...body];
  const wrapped = cps[2] === '-' && cps[3] === '-' ? `0-${body}-0` : body;
  const def = o.scheme === 'https' ? 443 : 80;
  const tag =
    o.scheme === 'https' && o.port === 443
      ? ''
      : `---${o.scheme === 'http' ? 'h' : ''}${o.port === def ? '' : o.port}`;
  const s = wrapped + tag;
  return /^[\x21-\x7e]*$/.test(s) ? s : domainToASCII(s);
}

// ---- properties ------------------------------------------------------------------------------

describe('one-label form — properties', () => {
  it('round trip: every origin with a one-label name parses back to itself', () => {
    let named = 0;
    const reached = { idn: 0, rtl: 0, astral: 0, wrapped: 0, marker: 0, http: 0, ipv4: 0, rldh: 0 };
    fc.assert(
      fc.property(origin, (o) => {
        const name = tryName(o, 'one-label');
        if (typeof name !== 'string') {
          expect(UNFIT.has(name.code), name.code).toBe(true);
          return;
        }
        named++;
        const u = unicodeHost(o.host);
        if (name.startsWith('xn--')) reached.idn++;
        if (/[\u0590-\u08ff]/.test(u)) reached.rtl++;
        if (/[\u{10000}-\u{10ffff}]/u.test(u)) reached.astral++;
        if (ampBody(u).startsWith('0-')) reached.wrapped++;
        if (o.scheme === 'http' || o.port !== 443) reached.marker++;
        if (o.scheme === 'http') reached.http++;
        if (/^[0-9.]+$/.test(o.host)) reached.ipv4++;
        if (o.host.split('.').some((l) => l.slice(2, 4) === '--' && !l.startsWith('xn--')))
          reached.rldh++;
        expect(parseCoralName(name, [Z])).toEqual({
          kind: 'origin',
          zone: Z,
          form: 'one-label',
          ...o,
        });
        expect(name.split('.')).toHaveLength(3); // one label under the two-label zone
        expect(name.split('.')[0]!.length).toBeLessThanOrEqual(63);
        // a browser-grade URL parser keeps the name byte for byte
        expect(new URL(`https://${name}/`).hostname).toBe(name);
      }),
      RUNS,
    );
    expect(named).toBeGreaterThan(RUNS.numRuns / 2);
    // The generator reaches every case the scheme has to handle (no vacuous pass).
    for (const [what, n] of Object.entries(reached)) expect(n, what).toBeGreaterThanOrEqual(10);
  });

  it('agrees with an independent AMP oracle on every label, and fails only for length or validity', () => {
    fc.assert(
      fc.property(origin, (o) => {
        const want = oracleLabel(o);
        const name = tryName(o, 'one-label');
        if (typeof name === 'string') {
          expect(name).toBe(`${want}.${Z}`);
        } else if (name.code === 'NAMES_ERR_LABEL_TOO_LONG') {
          expect(want.length).toBeGreaterThan(63);
        } else {
          // The only validity rule the generated hosts can break is the Bidi rule, once
          // right-to-left labels are joined with others. Node's IDNA (ada) refuses most of these
          // too, but lets some through (`aa-א`, an L label holding an R letter), which RFC 5893
          // rule 5 forbids; tr46 follows the RFC.
          expect(name.code).toBe('NAMES_ERR_LABEL_INVALID');
          expect(unicodeHost(o.host)).toMatch(/[\u0590-\u08ff]/);
        }
      }),
      RUNS,
    );
  });

  it('injective: different origins never share a name, in either form', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(origin, {
          minLength: 2,
          maxLength: 30,
          selector: (o) => `${o.scheme}://${o.host}:${o.port}`,
        }),
        (os) => {
          const seen = new Map<string, string>();
          for (const o of os) {
            for (const form of ['one-label', 'legacy'] as const) {
              if (form === 'legacy' && o.scheme === 'https') continue;
              const name = tryName(o, form);
              if (typeof name !== 'string') continue;
              const key = `${o.scheme}://${o.host}:${o.port}`;
              expect(seen.get(name) ?? key, name).toBe(key);
              seen.set(name, key);
            }
          }
        },
      ),
      { ...RUNS, numRuns: 200 },
    );
  });

  it('the marker cannot collide: a host body has only single hyphens and even runs', () => {
    fc.assert(
      fc.property(host, (h) => {
        const body = ampBody(unicodeHost(h));
        for (const run of body.match(/-+/g) ?? []) {
          expect(run.length === 1 || run.length % 2 === 0, body).toBe(true);
        }
        expect(body.startsWith('-') || body.endsWith('-')).toBe(false);
        const cps = [...body];
        expect(cps[2] === '-' && cps[3] === '-', body).toBe(false); // never R-LDH
      }),
      RUNS,
    );
  });

  it('one spelling per origin: any edit of a valid label is refused or is another origin’s name', () => {
    const edit = fc.tuple(
      fc.constantFrom('insert', 'delete', 'replace'),
      fc.nat(),
      fc.constantFrom('-', '0', 'h', 'a', '--', '---', 'xn--'),
    );
    fc.assert(
      fc.property(origin, edit, (o, [op, at, text]) => {
        const name = tryName(o, 'one-label');
        if (typeof name !== 'string') return;
        const lbl = name.slice(0, -(Z.length + 1));
        const i = at % (lbl.length + 1);
        const mutated =
          op === 'insert'
            ? lbl.slice(0, i) + text + lbl.slice(i)
            : op === 'delete'
              ? lbl.slice(0, i) + lbl.slice(i + 1)
              : lbl.slice(0, i) + text + lbl.slice(i + 1);
        const r = parseCoralName(`${mutated}.${Z}`, [Z]);
        if (r.kind !== 'origin') {
          expect(r.kind).toBe('invalid');
          return;
        }
        // Accepted: then it is exactly the canonical name of what it decodes to.
        expect(coralizeHost(r, Z)).toBe(`${mutated}.${Z}`);
        if (mutated !== lbl)
          expect(`${r.scheme}://${r.host}:${r.port}`).not.toBe(`${o.scheme}://${o.host}:${o.port}`);
      }),
      RUNS,
    );
  });

  it('0x20: any mix of upper and lower case parses the same', () => {
    fc.assert(
      fc.property(origin, fc.array(fc.boolean(), { minLength: 80, maxLength: 80 }), (o, flips) => {
        const name = tryName(o, 'one-label');
        if (typeof name !== 'string') return;
        const mixed = [...name]
          .map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c))
          .join('');
        expect(parseCoralName(`${mixed}.`, [Z])).toEqual(parseCoralName(name, [Z]));
      }),
      RUNS,
    );
  });

  it('never throws on arbitrary labels under the zone', () => {
    const junk = fc.string({
      unit: fc.constantFrom(...Array.from('ab09-_.xn—ü😊אA \\')),
      maxLength: 80,
    });
    fc.assert(
      fc.property(junk, (s) => {
        const r = parseCoralName(`${s}.${Z}`, [Z]);
        expect(['origin', 'invalid', 'apex', 'acme-challenge']).toContain(r.kind);
        if (r.kind === 'origin' && r.form === 'one-label') {
          // Accepted: the canonical name of what it decodes to is the input itself (U-labels in
          // the input are the same name as their A-labels).
          const name = coralizeHost(r, Z);
          expect(parseCoralName(name, [Z])).toEqual(r);
          if (/^[\x21-\x7e]*$/.test(s)) expect(name).toBe(`${s}.${Z}`.toLowerCase());
        }
      }),
      { ...RUNS, numRuns: 3000 },
    );
  });
});

describe('legacy form — properties', () => {
  it('round trip for every http origin that has a legacy name', () => {
    fc.assert(
      fc.property(host, port, (h, p) => {
        const o: Origin = { scheme: 'http', host: h, port: p === 0 ? 80 : p };
        const name = tryName(o, 'legacy');
        if (typeof name !== 'string') {
          expect(UNFIT.has(name.code), name.code).toBe(true);
          return;
        }
        expect(parseCoralName(name, [Z])).toEqual({
          kind: 'origin',
          zone: Z,
          form: 'legacy',
          ...o,
        });
        expect(new URL(`http://${name}/`).hostname).toBe(name);
      }),
      RUNS,
    );
  });
});
