/**
 * The blocklist as pure functions: what an entry means, which hosts it blocks, how a file is read,
 * and which origin a request names (as the proxy decodes it); and its configuration fields.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { coralizeHost } from '@coral/names';
import { describe, expect, it } from 'vitest';
import { Blocklist, parseBlocklistText, parseDomain } from '../../src/blocklist/blocklist.js';
import { requestOrigins } from '../../src/blocklist/gate.js';
import { loadConfig } from '../../src/config/load.js';
import { tmpDir } from '../helpers.js';

describe('Blocklist', () => {
  it('blocks a domain and every name under it, nothing that merely ends like it', () => {
    const b = new Blocklist(['example.com', '192.0.2.7', 'xn--bcher-kva.example']);
    expect(b.match('example.com')).toBe('example.com');
    expect(b.match('WWW.Example.COM.')).toBe('example.com');
    expect(b.match('a.b.example.com')).toBe('example.com');
    expect(b.match('badexample.com')).toBeUndefined();
    expect(b.match('example.com.evil.test')).toBeUndefined();
    expect(b.match('com')).toBeUndefined();
    expect(b.match('192.0.2.7')).toBe('192.0.2.7');
    expect(b.match('1.192.0.2.7')).toBeUndefined();
    expect(b.match('www.xn--bcher-kva.example')).toBe('xn--bcher-kva.example');
    expect(new Blocklist().match('example.com')).toBeUndefined();
  });

  it('reads entries in canonical form and refuses what is not a domain', () => {
    expect(parseDomain(' Example.COM. ')).toBe('example.com');
    expect(parseDomain('*.example.com')).toBe('example.com');
    expect(parseDomain('.example.com')).toBe('example.com');
    expect(parseDomain('Bücher.example')).toBe('xn--bcher-kva.example');
    expect(parseDomain('[2001:db8::1]')).toBe('2001:db8::1');
    expect(() => parseDomain('com')).toThrow(/two labels/);
    expect(() => parseDomain('http://example.com/')).toThrow(/not a domain name/);
    expect(() => parseDomain('exa mple.com')).toThrow(/not a domain name/);
    expect(() => parseDomain('a..b')).toThrow(/not a domain name/);
  });

  it('reads a file: one domain per line, # comments, every bad line named', () => {
    const r = parseBlocklistText(
      '# blocked\n\nexample.com  # the whole site\n  other.test\nnot a domain\ncom\n',
    );
    expect(r.domains).toEqual(['example.com', 'other.test']);
    expect(r.problems).toEqual([
      expect.stringMatching(/^line 5: "not a domain" is not a domain name/),
      expect.stringMatching(/^line 6: .*two labels/),
    ]);
  });
});

describe('requestOrigins', () => {
  const zones = ['nyud.net'];
  const sites = new Map([['www.school.example', 'origin.school.example']]);
  const req = (headers: string[], url = '/a') => ({ rawHeaders: headers, url });

  it('decodes the Host as the proxy does: legacy, one-label, sites, absolute form', () => {
    expect(requestOrigins(req(['Host', 'www.example.com.nyud.net']), zones, sites)).toEqual([
      'www.example.com',
    ]);
    expect(
      requestOrigins(req(['host', 'www.example.com.8080.nyud.net:8090']), zones, sites),
    ).toEqual(['www.example.com']);
    expect(requestOrigins(req(['HOST', 'www-example-com---h.NYUD.net.']), zones, sites)).toEqual([
      'www.example.com',
    ]);
    const idn = coralizeHost(
      { scheme: 'https', host: 'www.bücher.example', port: 443 },
      'nyud.net',
    );
    expect(requestOrigins(req(['Host', idn]), zones, sites)).toEqual(['www.xn--bcher-kva.example']);
    expect(requestOrigins(req(['Host', 'www.school.example']), zones, sites)).toEqual([
      'origin.school.example',
    ]);
    // Every Host field (the proxy refuses two, but a blocked one must not slip through), and the
    // authority of an absolute-form target with or without a Host.
    expect(
      requestOrigins(req(['Host', 'a.test.nyud.net', 'Host', 'b.test.nyud.net']), zones, sites),
    ).toEqual(['a.test', 'b.test']);
    expect(requestOrigins(req([], 'http://x.test.nyud.net:8090/p'), zones, sites)).toEqual([
      'x.test',
    ]);
    // Names that are not Coralized, or not names, name no origin: the proxy answers those.
    expect(requestOrigins(req(['Host', 'nyud.net']), zones, sites)).toEqual([]);
    expect(requestOrigins(req(['Host', 'www.example.com']), zones, sites)).toEqual([]);
    expect(requestOrigins(req(['Host', 'bad host']), zones, sites)).toEqual([]);
  });
});

describe('blocklist configuration', () => {
  it('takes proxy.blocklist (file and env) and proxy.blocklistFile, merged and canonical', () => {
    const dir = tmpDir('blocklist-config');
    const file = join(dir, 'list');
    writeFileSync(file, 'from-file.test\n# comment\nExample.COM\n');
    const c = loadConfig({
      env: { CORAL_PROXY_BLOCKLIST: 'a.test, *.b.test', CORAL_PROXY_BLOCKLIST_FILE: file },
    });
    expect(c.proxy.blocklist).toEqual(['a.test', 'b.test', 'from-file.test', 'example.com']);
    expect(loadConfig({}).proxy.blocklist).toEqual([]);
  });

  it('reports every bad entry and an unreadable file at once', () => {
    const dir = tmpDir('blocklist-config');
    const bad = join(dir, 'bad');
    writeFileSync(bad, 'ok.test\nhttp://x/\n');
    expect(() =>
      loadConfig({ env: { CORAL_PROXY_BLOCKLIST: 'com', CORAL_PROXY_BLOCKLIST_FILE: bad } }),
    ).toThrow(/proxy\.blocklist\.0: .*two labels/);
    expect(() => loadConfig({ env: { CORAL_PROXY_BLOCKLIST_FILE: bad } })).toThrow(
      /proxy\.blocklistFile .*bad: line 2: "http:\/\/x\/" is not a domain name/,
    );
    expect(() => loadConfig({ env: { CORAL_PROXY_BLOCKLIST_FILE: join(dir, 'none') } })).toThrow(
      /proxy\.blocklistFile: cannot read/,
    );
  });
});
