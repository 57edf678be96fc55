import { describe, expect, it } from 'vitest';
import { ampBody, decodeOneLabel, encodeOneLabel } from '../../src/forms/one-label.js';
import { canonicalHost } from '../../src/host.js';
import type { Origin } from '../../src/types.js';

const https = (host: string, port = 443): Origin => ({
  scheme: 'https',
  host: canonicalHost(host),
  port,
});
const http = (host: string, port = 80): Origin => ({
  scheme: 'http',
  host: canonicalHost(host),
  port,
});

const encode = (o: Origin) => {
  const r = encodeOneLabel(o);
  if (!r.ok) throw new Error(`${r.code}: ${r.reason}`);
  return r.value;
};

describe('one-label form — the AMP cache vectors (https on 443 is the plain form)', () => {
  // amp.dev "AMP Cache URL Format and Request Handling", Basic Algorithm table, and the
  // createCurlsSubdomain vectors of amp-toolbox's cache-url package.
  const vectors: [string, string][] = [
    ['example.com', 'example-com'],
    ['foo.example.com', 'foo-example-com'],
    ['foo-example.com', 'foo--example-com'],
    ['xn--57hw060o.com', 'xn---com-p33b41770a'], // ⚡😊.com
    ['en-us.example.com', '0-en--us-example-com-0'],
    ['something.com', 'something-com'],
    ['SOMETHING.COM', 'something-com'],
    ['hello-world.com', 'hello--world-com'],
    ['hello--world.com', 'hello----world-com'],
    ['www.example.com', 'www-example-com'],
    ['amp.dev', 'amp-dev'],
    ['pub.com', 'pub-com'],
    ['xn--bcher-kva.ch', 'xn--bcher-ch-65a'], // bücher.ch
    ['xn--4gbrim.xn----rmckbbajlc6dj7bxne2c.xn--wgbh1c', 'xn-------i5fvcbaopc6fkc0de0d9jybegt6cd'],
    ['點看.com', 'xn---com-k47jg78q'],
  ];
  for (const [host, label] of vectors) {
    it(`${host} ⇄ ${label}`, () => {
      expect(encode(https(host))).toBe(label);
      expect(decodeOneLabel(label)).toEqual({ ok: true, value: https(host) });
    });
  }

  it('U-label and A-label input give the same label', () => {
    expect(encode(https('bücher.ch'))).toBe(encode(https('xn--bcher-kva.ch')));
    expect(encode(https('⚡😊.com'))).toBe('xn---com-p33b41770a');
  });

  // Where AMP falls back to an irreversible SHA-256 name, Coral refuses: the proxy must know the
  // origin from the name alone.
  it('AMP fallback cases are refused with a stable code', () => {
    const long =
      'itwasadarkandstormynight.therainfellintorrents.exceptatoccasionalintervalswhenitwascheckedby.aviolentgustofwindwhichsweptupthestreets.com';
    expect(encodeOneLabel(https(long))).toMatchObject({
      ok: false,
      code: 'NAMES_ERR_LABEL_TOO_LONG',
      reason: expect.stringContaining('137 octets, over 63'),
    });
    // A mix of right-to-left and left-to-right in one label breaks the Bidi rule.
    expect(
      encodeOneLabel(https('hello.xn--4gbrim.xn----rmckbbajlc6dj7bxne2c.xn--wgbh1c')),
    ).toMatchObject({
      ok: false,
      code: 'NAMES_ERR_LABEL_INVALID',
      reason: expect.stringContaining('Bidi'),
    });
    // Hosts without a dot are not origins at all (canonicalHost refuses them).
    expect(() => canonicalHost('toplevelnohyphens')).toThrow(
      expect.objectContaining({ code: 'NAMES_ERR_BAD_HOST' }),
    );
  });
});

describe('one-label form — scheme and port marker', () => {
  const vectors: [Origin, string][] = [
    [https('www.example.com', 8443), 'www-example-com---8443'],
    [https('www.example.com', 80), 'www-example-com---80'],
    [https('www.example.com', 1), 'www-example-com---1'],
    [https('www.example.com', 65535), 'www-example-com---65535'],
    [http('www.example.com'), 'www-example-com---h'],
    [http('www.example.com', 8080), 'www-example-com---h8080'],
    [http('www.example.com', 443), 'www-example-com---h443'],
    [https('en-us.example.com', 8443), '0-en--us-example-com-0---8443'],
    [http('en-us.example.com'), '0-en--us-example-com-0---h'],
    [https('192.0.2.7'), '192-0-2-7'],
    [http('192.0.2.7', 8080), '192-0-2-7---h8080'],
    [https('xn--bcher-kva.ch', 8443), 'xn--bcher-ch---8443-zvb'],
    [http('xn--bcher-kva.ch'), 'xn--bcher-ch---h-dlb'],
    [https('r3---sn-ab5l6nzr.googlevideo.com'), '0-r3------sn--ab5l6nzr-googlevideo-com-0'],
    [https('a-b.c_d.example.org'), 'a--b-c_d-example-org'],
    // Right-to-left hosts take digit tags (a port is EN, allowed at the end of an RTL label).
    [
      https('xn--4gbrim.xn----rmckbbajlc6dj7bxne2c.xn--wgbh1c', 8443),
      'xn---------8443-3eo9bcba2awc5kkj1fe8fyljcent7ed',
    ],
  ];
  for (const [origin, label] of vectors) {
    it(`${origin.scheme}://${origin.host}:${origin.port} ⇄ ${label}`, () => {
      expect(encode(origin)).toBe(label);
      expect(decodeOneLabel(label)).toEqual({ ok: true, value: origin });
    });
  }

  it('the http tag "h" breaks the Bidi rule of a right-to-left host: refused, not mangled', () => {
    expect(encodeOneLabel(http('xn--4gbrim.xn----rmckbbajlc6dj7bxne2c.xn--wgbh1c'))).toMatchObject({
      ok: false,
      code: 'NAMES_ERR_LABEL_INVALID',
    });
  });

  it('the body never contains the marker, however many hyphens the host has', () => {
    for (const host of ['a-b.com', 'a--b.com', 'a---b.com', 'a----b.c-d', 'r3---sn-x.y']) {
      const body = ampBody(host);
      for (const run of body.match(/-+/g) ?? []) {
        expect(run.length === 1 || run.length % 2 === 0, `${host} → ${body}`).toBe(true);
      }
    }
  });
});

describe('one-label form — rejection of ambiguous and malformed labels', () => {
  const bad: [string, string][] = [
    ['www-example-com---443', 'NAMES_ERR_NOT_CANONICAL'], // default port written out
    ['www-example-com---h80', 'NAMES_ERR_NOT_CANONICAL'],
    ['en--us-example-com', 'NAMES_ERR_NOT_CANONICAL'], // the unwrapped spelling of 0-en--us-…-0
    ['www-example-com---', 'NAMES_ERR_BAD_MARKER'], // no tag
    ['www-example-com---x', 'NAMES_ERR_BAD_MARKER'],
    ['www-example-com---h0', 'NAMES_ERR_BAD_MARKER'],
    ['www-example-com---08080', 'NAMES_ERR_BAD_MARKER'], // leading zero
    ['www-example-com---99999', 'NAMES_ERR_BAD_PORT'],
    ['www-example-com---8080---1', 'NAMES_ERR_BAD_MARKER'], // two markers
    ['www-example-com-----8080', 'NAMES_ERR_BAD_MARKER'], // a run of five
    ['www---h-example-com', 'NAMES_ERR_BAD_MARKER'], // tag followed by more labels
    ['www-example-com---h8080-x', 'NAMES_ERR_BAD_MARKER'],
    ['-www-example-com', 'NAMES_ERR_BAD_HOST'],
    ['www-example-com-', 'NAMES_ERR_BAD_HOST'],
    ['www', 'NAMES_ERR_BAD_HOST'], // no dot: a single-label host
    ['8080', 'NAMES_ERR_BAD_HOST'],
    ['1-2-3', 'NAMES_ERR_BAD_HOST'], // numeric top-level label, not IPv4
    ['1-2-3-04', 'NAMES_ERR_BAD_HOST'],
    ['www-exa mple-com', 'NAMES_ERR_BAD_HOST'],
    ['xn--99999999999', 'NAMES_ERR_BAD_IDN'], // not valid punycode
    ['xn--ab-', 'NAMES_ERR_BAD_IDN'], // punycode of an ASCII-only string
    ['xn--bcher-ch-65a---8443', 'NAMES_ERR_BAD_IDN'], // marker outside the A-label
    [`${'a'.repeat(31)}-${'b'.repeat(32)}`, 'NAMES_ERR_BAD_HOST'], // 64 octets
  ];
  for (const [label, code] of bad) {
    it(`${JSON.stringify(label)} → ${code}`, () => {
      const r = decodeOneLabel(label);
      expect(r).toMatchObject({ ok: false, code });
      if (!r.ok) expect(r.reason.length).toBeGreaterThan(10);
    });
  }

  it('0-1-2-0 is the address 0.1.2.0, not a wrap (AMP would strip it to "1-2")', () => {
    // Coral unwraps "0-X-0" only when X has -- at 3–4, as the encoder wraps.
    expect(decodeOneLabel('0-1-2-0')).toEqual({ ok: true, value: https('0.1.2.0') });
  });

  it('a host whose own encoding starts with 0- and ends with -0 is not mistaken for a wrap', () => {
    // 0-a-b.x-0 encodes to 0--a--b-x--0: starts "0-", ends "-0", and has -- at 3–4 once the
    // outer "0-"/"-0" are taken off; but those are not single hyphens, so it is no wrap.
    expect(encode(https('0-a-b.x-0'))).toBe('0--a--b-x--0');
    expect(decodeOneLabel('0--a--b-x--0')).toEqual({ ok: true, value: https('0-a-b.x-0') });
  });
});
