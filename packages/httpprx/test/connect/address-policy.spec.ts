import { describe, expect, it } from 'vitest';

import {
  classifyAddress,
  filterAddresses,
  isAddressAllowed,
  parseIPv6,
} from '../../src/connect/index.js';
import type { AddressClass } from '../../src/connect/index.js';

const CASES: Array<[string, AddressClass]> = [
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['93.184.216.34', 'public'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.15.255.255', 'public'],
  ['172.32.0.0', 'public'],
  ['192.168.1.1', 'private'],
  ['192.169.0.1', 'public'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['100.63.255.255', 'public'],
  ['100.128.0.0', 'public'],
  ['169.254.169.254', 'link-local'],
  ['169.254.0.1', 'link-local'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'reserved'],
  ['192.0.0.8', 'reserved'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['192.0.2.1', 'documentation'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::FFFF:10.0.0.1', 'private'],
  ['::ffff:169.254.169.254', 'link-local'],
  ['::ffff:8.8.8.8', 'public'],
  ['::ffff:0:10.1.2.3', 'private'],
  ['::127.0.0.1', 'reserved'],
  ['64:ff9b::10.0.0.1', 'private'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['64:ff9b:1::1', 'reserved'],
  ['2002:0a00:0001::1', 'private'],
  ['2002:0808:0808::1', 'public'],
  ['fc00::1', 'unique-local'],
  ['fd12:3456:789a::1', 'unique-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fec0::1', 'site-local'],
  ['ff02::1', 'multicast'],
  ['100::1', 'reserved'],
  ['2001:db8::1', 'documentation'],
  ['2606:4700:4700::1111', 'public'],
  ['2001:4860:4860::8888', 'public'],
];

describe('address classification', () => {
  it.each(CASES)('%s is %s', (address, cls) => {
    expect(classifyAddress(address)).toBe(cls);
  });

  it('parses IPv6 forms into eight groups', () => {
    expect(parseIPv6('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIPv6('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIPv6('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
    expect(parseIPv6('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseIPv6('1:2:3:4:5:6:1.2.3.4')).toEqual([1, 2, 3, 4, 5, 6, 0x102, 0x304]);
    expect(parseIPv6('1.2.3.4')).toBeUndefined();
    expect(parseIPv6('1:2:3')).toBeUndefined();
  });

  it('throws a TypeError for things that are not IP addresses', () => {
    for (const bad of ['', 'localhost', '1.2.3', '256.1.1.1', '::g', '2130706433', '0x7f.1']) {
      expect(() => classifyAddress(bad)).toThrow(TypeError);
      expect(isAddressAllowed(bad, { allowPrivate: true })).toBe(false);
    }
  });
});

describe('address policy', () => {
  it('refuses every non-public class by default and allows public and documentation ranges', () => {
    for (const [address, cls] of CASES) {
      expect(isAddressAllowed(address)).toBe(cls === 'public' || cls === 'documentation');
    }
  });

  it('allowPrivate opens private ranges but never unspecified or multicast', () => {
    for (const [address, cls] of CASES) {
      expect(isAddressAllowed(address, { allowPrivate: true })).toBe(
        cls !== 'unspecified' && cls !== 'multicast',
      );
    }
  });

  it('filterAddresses keeps the order of allowed ones and names the class of refused ones', () => {
    const { allowed, refused } = filterAddresses([
      { address: '10.0.0.1', family: 4 as const },
      { address: '192.0.2.1', family: 4 as const },
      { address: '::1', family: 6 as const },
      { address: '2001:db8::5', family: 6 as const },
      { address: 'not-an-ip', family: 4 as const },
    ]);
    expect(allowed.map((a) => a.address)).toEqual(['192.0.2.1', '2001:db8::5']);
    expect(refused).toEqual([
      { address: '10.0.0.1', family: 4, class: 'private' },
      { address: '::1', family: 6, class: 'loopback' },
      { address: 'not-an-ip', family: 4, class: 'invalid' },
    ]);
  });
});
