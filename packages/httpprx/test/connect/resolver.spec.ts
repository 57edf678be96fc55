import { describe, expect, it } from 'vitest';

import {
  HostsResolver,
  SystemResolver,
  assertValidHost,
  literalAddress,
  normalizeHost,
} from '../../src/connect/index.js';
import type { LookupAll } from '../../src/connect/index.js';
import { TableResolver } from './helpers.js';

const failingLookup =
  (code: string): LookupAll =>
  async () => {
    throw Object.assign(new Error(`lookup failed: ${code}`), { code });
  };

describe('resolvers', () => {
  it('IP literals resolve to themselves without a lookup', async () => {
    let lookups = 0;
    const r = new SystemResolver({
      lookup: async () => {
        lookups++;
        return [];
      },
    });
    expect(await r.resolve('192.0.2.7')).toEqual([{ address: '192.0.2.7', family: 4 }]);
    expect(await r.resolve('[2001:DB8::1]')).toEqual([{ address: '2001:db8::1', family: 6 }]);
    expect(lookups).toBe(0);
    expect(literalAddress('example.com')).toBeUndefined();
  });

  it('SystemResolver asks getaddrinfo for all families, verbatim, and keeps its order', async () => {
    const seen: unknown[] = [];
    const r = new SystemResolver({
      lookup: async (host, opts) => {
        seen.push([host, opts]);
        return [
          { address: '2001:db8::2', family: 6 },
          { address: '192.0.2.2', family: 4 },
          { address: '192.0.2.2', family: 4 },
        ];
      },
    });
    expect(await r.resolve('WWW.Example.COM.')).toEqual([
      { address: '2001:db8::2', family: 6 },
      { address: '192.0.2.2', family: 4 },
    ]);
    expect(seen).toEqual([['www.example.com', { all: true, verbatim: true }]]);
  });

  it('SystemResolver resolves localhost for real (from /etc/hosts, no network)', async () => {
    const out = await new SystemResolver().resolve('localhost');
    expect(out.length).toBeGreaterThan(0);
    for (const a of out) expect(['127.0.0.1', '::1']).toContain(a.address);
  });

  it('maps "no such name" DNS errors to EADDRNOTAVAIL and other failures to CORAL_ORIGIN_DNS_FAILED', async () => {
    for (const code of ['ENOTFOUND', 'ENODATA']) {
      await expect(
        new SystemResolver({ lookup: failingLookup(code) }).resolve('x.test'),
      ).rejects.toMatchObject({
        code: 'EADDRNOTAVAIL',
        status: 502,
        cause: { code },
      });
    }
    await expect(
      new SystemResolver({ lookup: failingLookup('EAI_AGAIN') }).resolve('x.test'),
    ).rejects.toMatchObject({ code: 'CORAL_ORIGIN_DNS_FAILED', dnsCode: 'EAI_AGAIN', status: 502 });
    await expect(
      new SystemResolver({ lookup: async () => [] }).resolve('x.test'),
    ).rejects.toMatchObject({
      code: 'EADDRNOTAVAIL',
    });
  });

  it('an aborted lookup returns at once with ABORT_ERR', async () => {
    const r = new SystemResolver({ lookup: () => new Promise(() => {}) });
    const ac = new AbortController();
    const p = r.resolve('slow.test', { signal: ac.signal });
    ac.abort();
    await expect(p).rejects.toMatchObject({ code: 'ABORT_ERR' });
  });

  it('the hosts map wins over the fallback resolver, case-insensitively', async () => {
    const fallback = new TableResolver({
      'origin.test': ['192.0.2.9'],
      'other.test': ['192.0.2.10'],
    });
    const r = new HostsResolver({ fallback }, { hosts: { 'Origin.Test': ['127.0.0.1', '::1'] } });
    expect(await r.resolve('origin.test')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(await r.resolve('ORIGIN.TEST.')).toHaveLength(2);
    expect(fallback.count('origin.test')).toBe(0);
    expect(await r.resolve('other.test')).toEqual([{ address: '192.0.2.10', family: 4 }]);
    expect(fallback.count('other.test')).toBe(1);
  });

  it('without a fallback, or with an empty answer, a name has no address: EADDRNOTAVAIL', async () => {
    const r = new HostsResolver({}, { hosts: { 'empty.test': [] } });
    await expect(r.resolve('unknown.test')).rejects.toMatchObject({ code: 'EADDRNOTAVAIL' });
    await expect(r.resolve('empty.test')).rejects.toMatchObject({ code: 'EADDRNOTAVAIL' });
    const viaEmpty = new HostsResolver({ fallback: new TableResolver({}) });
    await expect(viaEmpty.resolve('nothing.test')).rejects.toMatchObject({ code: 'EADDRNOTAVAIL' });
  });

  it('refuses a hosts entry that is not an IP address, at construction', () => {
    expect(() => new HostsResolver({}, { hosts: { 'a.test': ['not-an-ip'] } })).toThrow(
      expect.objectContaining({ code: 'CORAL_INVALID_ORIGIN' }),
    );
  });

  it('normalizes and validates host names', () => {
    expect(normalizeHost(' Example.COM. ')).toBe('example.com');
    expect(normalizeHost('[::1]')).toBe('::1');
    for (const ok of ['example.com', 'a-b_c.test', '127.0.0.1', '::1', 'localhost']) {
      expect(() => assertValidHost(ok)).not.toThrow();
    }
    for (const bad of [
      '',
      ' ',
      'a b.test',
      'a..b',
      'user@host',
      'host/path',
      'x'.repeat(64) + '.test',
      42,
    ]) {
      expect(() => assertValidHost(bad)).toThrow(
        expect.objectContaining({ code: 'CORAL_INVALID_ORIGIN', status: 400 }),
      );
    }
  });
});
