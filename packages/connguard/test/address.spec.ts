import { describe, expect, it } from 'vitest';
import { clientKeys, DEFAULT_ADDRESS_BITS, DEFAULT_PREFIX_BITS } from '../src/index.js';

const keys = (a: string | undefined) => clientKeys(a, DEFAULT_ADDRESS_BITS, DEFAULT_PREFIX_BITS);

describe('clientKeys', () => {
  it('IPv4: the address is the client, its /24 the network', () => {
    expect(keys('192.0.2.77')).toEqual({
      address: '192.0.2.77',
      client: '192.0.2.77/32',
      network: '192.0.2.0/24',
    });
    expect(keys('192.0.2.1').network).toBe(keys('192.0.2.254').network);
    expect(keys('192.0.3.1').network).not.toBe(keys('192.0.2.1').network);
  });

  it('IPv4-mapped IPv6 is the IPv4 client (one budget on a dual-stack listener)', () => {
    expect(keys('::ffff:192.0.2.77')).toEqual(keys('192.0.2.77'));
    expect(keys('::FFFF:c000:024d')).toEqual(keys('192.0.2.77'));
  });

  it('IPv6: the /64 is the client, the /56 the network', () => {
    const a = keys('2001:db8:0:1::1');
    expect(a.client).toBe(keys('2001:db8:0:1:ffff:ffff:ffff:ffff').client);
    expect(a.client).not.toBe(keys('2001:db8:0:2::1').client);
    expect(a.network).toBe(keys('2001:db8:0:ff::1').network); // 0x00-0xff: one /56
    expect(a.network).not.toBe(keys('2001:db8:0:100::1').network);
    expect(keys('fe80::1%eth0').client).toBe(keys('fe80::2').client);
  });

  it('text that is no address gets keys of its own, never a crash', () => {
    for (const bad of [undefined, '', 'localhost', '1.2.3', '1.2.3.256', '1::2::3', 'g::1']) {
      expect(keys(bad).client.startsWith('?:')).toBe(true);
    }
  });
});
