import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';

import { SmartConnector } from '../../src/connect/index.js';
import type { Dial } from '../../src/connect/index.js';
import { TableResolver } from './helpers.js';

describe('SmartConnector bad input and name errors', () => {
  const never: Dial = async () => {
    throw new Error('must not dial');
  };

  it('rejects invalid hosts and ports with CORAL_INVALID_ORIGIN (400) before resolving', async () => {
    const resolver = new TableResolver({});
    const c = new SmartConnector({ clock: new ManualClock(), resolver, dial: never }, {});
    const cases: Array<[unknown, unknown]> = [
      ['', 80],
      ['a b.test', 80],
      ['host/evil', 80],
      ['ok.test', 0],
      ['ok.test', 65_536],
      ['ok.test', 80.5],
      ['ok.test', '80'],
      [undefined, 80],
    ];
    for (const [host, port] of cases) {
      await expect(c.connect(host as string, port as number)).rejects.toMatchObject({
        code: 'CORAL_INVALID_ORIGIN',
        status: 400,
      });
    }
    expect(resolver.calls.size).toBe(0);
  });

  it('a name with no address fails with EADDRNOTAVAIL', async () => {
    const resolver = new TableResolver({ 'empty.test': [] });
    const c = new SmartConnector({ clock: new ManualClock(), resolver, dial: never }, {});
    const err = await c.connect('empty.test', 80).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'EADDRNOTAVAIL', status: 502, host: 'empty.test', port: 80 });
    const hostsOnly = new SmartConnector(
      { clock: new ManualClock(), resolver: new TableResolver({}), dial: never },
      { hosts: { 'blank.test': [] } },
    );
    await expect(hostsOnly.connect('blank.test', 80)).rejects.toMatchObject({
      code: 'EADDRNOTAVAIL',
    });
  });

  it('a resolver that throws something unexpected gives CORAL_ORIGIN_DNS_FAILED', async () => {
    const c = new SmartConnector(
      {
        clock: new ManualClock(),
        resolver: {
          resolve: async () => {
            throw new Error('resolver exploded');
          },
        },
        dial: never,
      },
      {},
    );
    await expect(c.connect('x.test', 80)).rejects.toMatchObject({
      code: 'CORAL_ORIGIN_DNS_FAILED',
    });
  });

  it('the bound also covers a resolution that never answers', async () => {
    const clock = new ManualClock();
    const c = new SmartConnector(
      { clock, resolver: { resolve: () => new Promise(() => {}) }, dial: never },
      { timeoutMs: 300 },
    );
    const p = expect(c.connect('hang.test', 80)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    await clock.advance(300);
    await p;
  });

  it('dials every address at once, IPv6 first (the seed’s IPv6 bias), and counts failures by code', async () => {
    const calls: string[] = [];
    const dial: Dial = async (t) => {
      calls.push(t.address);
      throw Object.assign(new Error('spy refuses'), { code: 'ECONNREFUSED' });
    };
    const resolver = new TableResolver({
      'dual.test': ['192.0.2.1', '2001:db8::1', '192.0.2.2', '2001:db8::2', '10.0.0.1'],
    });
    const c = new SmartConnector({ clock: new ManualClock(), resolver, dial }, {});
    await expect(c.connect('dual.test', 443)).rejects.toMatchObject({
      code: 'CORAL_ORIGIN_UNREACHABLE',
    });
    expect(calls).toEqual(['2001:db8::1', '2001:db8::2', '192.0.2.1', '192.0.2.2']);
    expect(c.stats()).toMatchObject({
      connects: 1,
      races: 1,
      dials: 4,
      refusedAddresses: 1,
      failures: { CORAL_ORIGIN_UNREACHABLE: 1 },
    });
  });

  it('rejects invalid options at construction', () => {
    expect(() => new SmartConnector({}, { cacheSize: -1 })).toThrow(RangeError);
    expect(() => new SmartConnector({}, { cacheSize: 1.5 })).toThrow(RangeError);
    expect(() => new SmartConnector({}, { floorMs: -5 })).toThrow(RangeError);
    expect(() => new SmartConnector({}, { timeoutMs: Number.NaN })).toThrow(RangeError);
    expect(() => new SmartConnector({}, { hosts: { 'a.test': ['nope'] } })).toThrow(
      expect.objectContaining({ code: 'CORAL_INVALID_ORIGIN' }),
    );
  });
});
