import { describe, expect, it } from 'vitest';
import {
  ORIGIN_BOUND_FIELDS,
  coralLink,
  cookieForClient,
  rewriteLinks,
  sameUrlUpgrade,
} from '../../src/mapping/links.js';
import type { LinkContext } from '../../src/mapping/links.js';

const base = { mode: 'coral', zone: 'nyud.net', httpPort: 8090 } as const;
const plainOff: LinkContext = { ...base, tls: false, clientPort: 8090 };
const plainOn: LinkContext = { ...base, tls: false, clientPort: 8090, tlsPort: 8443 };
const tlsOn: LinkContext = { ...base, tls: true, clientPort: 8443, tlsPort: 8443 };
const tls443: LinkContext = { ...base, tls: true, tlsPort: 443 };

describe('coralLink (Location, Content-Location)', () => {
  const cases: Array<[string, LinkContext, string | undefined]> = [
    // https targets: the one-label name when TLS is on, untouched when it is off.
    ['https://www.example.com/a?b#c', plainOn, 'https://www-example-com.nyud.net:8443/a?b#c'],
    ['https://www.example.com:8443/a', tlsOn, 'https://www-example-com---8443.nyud.net:8443/a'],
    ['https://www.example.com/a', tls443, 'https://www-example-com.nyud.net/a'],
    ['https://www.example.com/a', plainOff, undefined],
    // http targets: legacy over plain http (the port the client used), ---h over TLS.
    ['http://www.example.com:8080/x', plainOff, 'http://www.example.com.8080.nyud.net:8090/x'],
    ['http://www.example.com/x', plainOn, 'http://www.example.com.nyud.net:8090/x'],
    ['http://www.example.com/x', tlsOn, 'https://www-example-com---h.nyud.net:8443/x'],
    [
      `http://${'a'.repeat(60)}.com/x`,
      tlsOn,
      `http://${'a'.repeat(60)}.com.nyud.net:8090/x`, // no one-label name: the legacy one
    ],
    // Left alone: relative, other schemes, no Coralized form, already Coralized.
    ['/relative', tlsOn, undefined],
    ['//www.example.com/x', tlsOn, undefined],
    ['ftp://www.example.com/x', tlsOn, undefined],
    ['https://[2001:db8::1]/x', tlsOn, undefined],
    ['https://localhost/x', tlsOn, undefined],
    ['https://www-example-com.nyud.net/x', tlsOn, undefined],
  ];
  for (const [link, ctx, want] of cases) {
    it(`${link} (tls ${ctx.tls ? 'client' : ctx.tlsPort ? 'on' : 'off'}) → ${String(want)}`, () => {
      expect(coralLink(link, ctx)).toBe(want);
    });
  }

  it('site mode is never rewritten', () => {
    expect(coralLink('https://www.example.com/', { ...tlsOn, mode: 'site' })).toBeUndefined();
  });

  it('rewriteLinks rewrites both fields and nothing else', () => {
    const h: Record<string, string> = {
      location: 'https://a.example.com/x',
      'content-location': 'https://a.example.com/x.en',
      link: '<https://a.example.com/s.css>; rel=preload',
    };
    rewriteLinks(tlsOn, h);
    expect(h).toEqual({
      location: 'https://a-example-com.nyud.net:8443/x',
      'content-location': 'https://a-example-com.nyud.net:8443/x.en',
      link: '<https://a.example.com/s.css>; rel=preload',
    });
    expect(ORIGIN_BOUND_FIELDS).toContain('alt-svc');
  });
});

describe('sameUrlUpgrade', () => {
  const from = 'http://a.example.com/p?q=1';
  it.each([301, 302, 303, 307, 308])('%i to the same URL over https', (status) => {
    expect(sameUrlUpgrade(from, status, 'https://a.example.com/p?q=1')).toBe(
      'https://a.example.com/p?q=1',
    );
  });
  it('the port may change with the scheme; case and a fragment do not matter', () => {
    expect(sameUrlUpgrade(from, 301, 'HTTPS://A.example.com:8443/p?q=1#top')).toBe(
      'https://a.example.com:8443/p?q=1',
    );
  });
  const no: Array<[string, number, string | undefined]> = [
    [from, 200, 'https://a.example.com/p?q=1'],
    [from, 304, 'https://a.example.com/p?q=1'],
    [from, 301, undefined],
    [from, 301, 'https://b.example.com/p?q=1'],
    [from, 301, 'https://a.example.com/other'],
    [from, 301, 'https://a.example.com/p?q=2'],
    [from, 301, 'https://a.example.com/p'],
    [from, 301, 'http://a.example.com/p?q=1'],
    [from, 301, 'https://u:p@a.example.com/p?q=1'],
    [from, 301, 'https://a.example.com.evil.test/p?q=1'],
    ['https://a.example.com/p?q=1', 301, 'https://a.example.com/p?q=1'],
  ];
  it.each(no)('not an upgrade: %s %i → %s', (url, status, loc) => {
    expect(sameUrlUpgrade(url, status, loc)).toBeUndefined();
  });
});

describe('cookieForClient (site mode, RFC 6265)', () => {
  const zones = ['nyud.net'];
  const cases: Array<[string, string, boolean]> = [
    ['sid=1; Path=/; HttpOnly', 'shop.example', true], // host-only
    ['sid=1; Domain=shop.example', 'shop.example', true],
    ['sid=1; Domain=.example', 'shop.example', true], // the site's parent, outside the zone
    ['sid=1; Domain=other.example', 'shop.example', false], // does not domain-match
    ['sid=1; Domain=nyud.net', 'shop.nyud.net', false], // the zone: every Coralized site
    ['sid=1; domain=.NYUD.NET', 'shop.nyud.net', false],
    ['sid=1; Domain=net', 'shop.nyud.net', false], // a parent of the zone
    ['sid=1; Domain=shop.nyud.net', 'shop.nyud.net', true],
    ['sid=1; Domain=nyud.net; Domain=shop.nyud.net', 'shop.nyud.net', true], // the last counts
    ['sid=1; Domain=shop.nyud.net; Domain=nyud.net', 'shop.nyud.net', false],
    ['sid=1; Domain=', 'shop.nyud.net', true], // empty: ignored (§5.2.3), host-only
  ];
  it.each(cases)('%s for %s → kept %s', (cookie, host, kept) => {
    expect(cookieForClient(cookie, host, zones)).toBe(kept ? cookie : undefined);
  });
});
