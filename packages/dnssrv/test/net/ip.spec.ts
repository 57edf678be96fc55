import { describe, expect, it } from 'vitest';
import { cidrContains, isPublicIPv4, parseCidr, parseIp } from '../../src/net/ip.js';

describe("ip (the DNS server's: @coral/runtime's parser, its own error code)", () => {
  it('a bad CIDR in the configuration fails with DNS_ERR_CONFIG', () => {
    expect(parseCidr('10.1.2.3/8').text).toBe('10.0.0.0/8');
    expect(cidrContains(parseCidr('2001:db8::/32'), parseIp('2001:db8:1::5')!)).toBe(true);
    expect(() => parseCidr('10.0.0.0/33')).toThrow(
      expect.objectContaining({ code: 'DNS_ERR_CONFIG' }),
    );
    expect(() => parseCidr('nope/8')).toThrow(expect.objectContaining({ code: 'DNS_ERR_CONFIG' }));
  });

  it('public IPv4 addresses', () => {
    expect(isPublicIPv4(parseIp('8.8.8.8')!)).toBe(true);
    for (const a of ['10.1.2.3', '127.0.0.1', '192.0.2.1', '224.0.0.1', '255.255.255.255']) {
      expect(isPublicIPv4(parseIp(a)!)).toBe(false);
    }
    expect(isPublicIPv4(parseIp('2001:db8::1')!)).toBe(false);
  });
});
