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
