import { describe, expect, it } from 'vitest';
import { parseCoralName } from '../src/index.js';

const Z = ['nyud.net'];

describe('parseCoralName', () => {
  it('one label is the one-label form; two or more the legacy form', () => {
    expect(parseCoralName('www-example-com.nyud.net', Z)).toEqual({
      kind: 'origin',
      zone: 'nyud.net',
      form: 'one-label',
      scheme: 'https',
      host: 'www.example.com',
      port: 443,
    });
    expect(parseCoralName('www-example-com---h8080.nyud.net', Z)).toMatchObject({
      form: 'one-label',
      scheme: 'http',
      port: 8080,
    });
    expect(parseCoralName('www.example.com.nyud.net', Z)).toMatchObject({
      form: 'legacy',
      scheme: 'http',
      port: 80,
    });
  });

  it('_acme-challenge.<zone> is the ACME DNS-01 name, any case, trailing dot or not', () => {
    expect(parseCoralName('_acme-challenge.nyud.net', Z)).toEqual({
      kind: 'acme-challenge',
      zone: 'nyud.net',
    });
    expect(parseCoralName('_ACME-Challenge.NYUD.net.', Z)).toEqual({
      kind: 'acme-challenge',
      zone: 'nyud.net',
    });
    expect(parseCoralName('_acme-challenge.cdn.nyud.net', ['nyud.net', 'cdn.nyud.net'])).toEqual({
      kind: 'acme-challenge',
      zone: 'cdn.nyud.net',
    });
  });

  it('other underscore labels right under the zone are reserved', () => {
    for (const name of ['_dmarc.nyud.net', '_acme-challenge2.nyud.net', '_x---h.nyud.net']) {
      expect(parseCoralName(name, Z)).toMatchObject({
        kind: 'invalid',
        code: 'NAMES_ERR_RESERVED',
      });
    }
    // deeper underscore names are legacy names whose first host label is not a host label
    expect(parseCoralName('_acme-challenge.www-example-com.nyud.net', Z)).toMatchObject({
      kind: 'invalid',
      code: 'NAMES_ERR_BAD_HOST',
    });
  });

  it('a name for an origin inside a Coral zone is refused in both forms (no fetching from itself)', () => {
    const zones = ['nyud.net', 'coral.example'];
    for (const name of [
      'www-example-com-nyud-net.nyud.net',
      'www.nyud.net.nyud.net',
      'a.nyud.net.8080.nyud.net',
      'www-coral-example.nyud.net',
      'x.coral.example.nyud.net',
    ]) {
      expect(parseCoralName(name, zones), name).toMatchObject({
        kind: 'invalid',
        code: 'NAMES_ERR_ORIGIN_IN_ZONE',
      });
    }
  });

  it('is case-insensitive (0x20 resolvers) and returns the canonical lowercase origin', () => {
    const want = parseCoralName('xn--bcher-ch---8443-zvb.nyud.net', Z);
    expect(want).toMatchObject({ kind: 'origin', host: 'xn--bcher-kva.ch', port: 8443 });
    expect(parseCoralName('XN--BcHeR-Ch---8443-ZVB.NyUd.NeT.', Z)).toEqual(want);
  });

  it('accepts U-labels in the name (UTS #46) and returns A-labels', () => {
    expect(parseCoralName('bücher-ch---8443.nyud.net', Z)).toEqual(
      parseCoralName('xn--bcher-ch---8443-zvb.nyud.net', Z),
    );
    expect(parseCoralName('www.bücher.ch.nyud.net', Z)).toMatchObject({
      form: 'legacy',
      host: 'www.xn--bcher-kva.ch',
    });
    expect(parseCoralName('BÜCHER-ch.nyud.net', Z)).toMatchObject({ host: 'xn--bcher-kva.ch' });
  });

  it('refuses invalid IDN names under the zone, and is outside for those elsewhere', () => {
    expect(parseCoralName('a\u200d-com.nyud.net', Z)).toMatchObject({
      kind: 'invalid',
      code: 'NAMES_ERR_BAD_IDN',
    });
    expect(parseCoralName('a\u200d.example', Z)).toEqual({ kind: 'outside' });
    expect(parseCoralName('www.xn--zz.com.nyud.net', Z)).toMatchObject({
      kind: 'invalid',
      code: 'NAMES_ERR_BAD_IDN',
    });
  });

  it('refuses names over 253 octets', () => {
    const host = Array.from({ length: 5 }, () => 'a'.repeat(50)).join('.') + '.com';
    expect(parseCoralName(`${host}.nyud.net`, Z)).toMatchObject({
      kind: 'invalid',
      code: 'NAMES_ERR_NAME_TOO_LONG',
    });
  });

  it('never throws, whatever the input', () => {
    for (const name of [
      '.',
      '..',
      '.nyud.net',
      '-.nyud.net',
      '\u0000.nyud.net',
      '\ud800.nyud.net',
      ' nyud.net',
      '*.nyud.net',
      '---.nyud.net',
      'xn--.nyud.net',
    ]) {
      expect(() => parseCoralName(name, Z)).not.toThrow();
      const r = parseCoralName(name, Z);
      expect(['outside', 'invalid']).toContain(r.kind);
    }
  });

  it('ignores empty zones in the list', () => {
    expect(parseCoralName('www.example.com', ['', '.'])).toEqual({ kind: 'outside' });
  });
});
