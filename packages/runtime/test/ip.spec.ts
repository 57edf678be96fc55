import { describe, expect, it } from 'vitest';
import {
  cidrContains,
  formatIp,
  ipv6Groups,
  isV4Mapped,
  parseCidr,
  parseIp,
  parseIPv6,
  prefixKey,
} from '../src/ip.js';

describe('ip', () => {
  it('parses IPv4, IPv6 and IPv4-mapped addresses', () => {
    expect([...parseIp('203.0.113.7')!]).toEqual([203, 0, 113, 7]);
    expect(parseIp('256.1.1.1')).toBeUndefined();
    expect(parseIp('1.2.3')).toBeUndefined();
    expect(parseIp('01.2.3.4')).toBeUndefined();
    expect(parseIp('not an ip')).toBeUndefined();
    expect([...parseIp('::ffff:10.1.2.3')!]).toEqual([10, 1, 2, 3]);
    expect(formatIp(parseIp('2001:db8::1')!)).toBe('2001:db8::1');
    expect(formatIp(parseIp('2001:0db8:0:0:1:0:0:1')!)).toBe('2001:db8::1:0:0:1');
    expect(parseIp('1::2::3')).toBeUndefined();
    expect(parseIp('fe80::1%eth0')?.length).toBe(16);
  });

  it('CIDRs: parse, normalise, contain', () => {
    const c = parseCidr('10.1.2.3/8');
    expect(c.text).toBe('10.0.0.0/8');
    expect(cidrContains(c, parseIp('10.200.0.1')!)).toBe(true);
    expect(cidrContains(c, parseIp('11.0.0.1')!)).toBe(false);
    expect(cidrContains(parseCidr('192.168.1.128/25'), parseIp('192.168.1.200')!)).toBe(true);
    expect(cidrContains(parseCidr('192.168.1.128/25'), parseIp('192.168.1.100')!)).toBe(false);
    expect(cidrContains(parseCidr('2001:db8::/32'), parseIp('2001:db8:1::5')!)).toBe(true);
    expect(cidrContains(parseCidr('2001:db8::/32'), parseIp('10.0.0.1')!)).toBe(false);
    expect(cidrContains(parseCidr('0.0.0.0/0'), parseIp('1.2.3.4')!)).toBe(true);
    expect(parseCidr('7.7.7.7').prefix).toBe(32);
    expect(() => parseCidr('10.0.0.0/33')).toThrow(TypeError);
    expect(() => parseCidr('nope/8')).toThrow('invalid CIDR "nope/8": bad address');
    expect(() => parseCidr('nope/8', (m) => new RangeError(m))).toThrow(RangeError);
  });

  it('IPv6 groups and IPv4-mapped addresses', () => {
    expect(ipv6Groups(parseIPv6('1:2:3:4:5:6:1.2.3.4')!)).toEqual([1, 2, 3, 4, 5, 6, 0x102, 0x304]);
    expect(isV4Mapped(parseIPv6('::ffff:1.2.3.4')!)).toBe(true);
    expect(isV4Mapped(parseIPv6('::ffff:0:1.2.3.4')!)).toBe(false);
  });

  it('prefix keys', () => {
    expect(prefixKey(parseIp('203.0.113.77')!, 24)).toBe('203.0.113.0/24');
    expect(prefixKey(parseIp('203.0.113.77')!, 16)).toBe('203.0.0.0/16');
    expect(prefixKey(parseIp('2001:db8:aaaa:bbbb::1')!, 48)).toBe('2001:db8:aaaa::/48');
  });
});
