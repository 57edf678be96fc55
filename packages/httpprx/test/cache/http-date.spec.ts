import { describe, expect, it } from 'vitest';
import { formatHttpDate, parseHttpDate } from '../../src/cache/http-date.js';

const T = Date.UTC(1994, 10, 6, 8, 49, 37); // Sun, 06 Nov 1994 08:49:37 GMT
const NOW = Date.UTC(2026, 0, 1);

describe('HTTP-date (RFC 9110 §5.6.7)', () => {
  it('accepts the three formats of the RFC example', () => {
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(T); // IMF-fixdate
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW)).toBe(T); // rfc850-date
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994', NOW)).toBe(T); // asctime-date
    expect(parseHttpDate('Sun Nov 16 08:49:37 1994', NOW)).toBe(T + 10 * 86400_000);
    expect(parseHttpDate('Sun Nov 06 08:49:37 1994', NOW)).toBe(T); // 2DIGIT is allowed too
  });

  it('formats IMF-fixdate and reads it back', () => {
    expect(formatHttpDate(T)).toBe('Sun, 06 Nov 1994 08:49:37 GMT');
    for (const ms of [0, NOW, NOW + 123_456_000, Date.UTC(2000, 1, 29, 23, 59, 59)]) {
      expect(parseHttpDate(formatHttpDate(ms), NOW)).toBe(ms);
    }
  });

  it('refuses every other layout Date.parse would take (so an Expires in them is already expired, RFC 9111 §5.3)', () => {
    const invalid = [
      '0',
      '-1',
      '',
      'now',
      '1994-11-06T08:49:37Z', // ISO 8601
      'Sun, 06 Nov 1994 08:49:37 +0000', // numeric zone
      'Sun, 06 Nov 1994 08:49:37 UTC',
      'Sun, 06 Nov 1994 08:49:37 EST',
      'Sun, 06 Nov 1994 08:49:37', // no zone
      'Sun, 6 Nov 1994 08:49:37 GMT', // one-digit day
      'Sun, 06 Nov 94 08:49:37 GMT', // two-digit year in IMF-fixdate
      'Sun,06 Nov 1994 08:49:37 GMT', // missing SP
      'Sun, 06  Nov 1994 08:49:37 GMT', // extra SP
      ' Sun, 06 Nov 1994 08:49:37 GMT', // leading whitespace
      'Sun, 06 Nov 1994 08:49:37 GMT ', // trailing whitespace
      'Sun, 06 Nov 1994 8:49:37 GMT', // one-digit hour
      'Sun, 06 November 1994 08:49:37 GMT',
      'Sunday, 06 Nov 1994 08:49:37 GMT', // long day name in IMF-fixdate
      'Sun, 06-Nov-94 08:49:37 GMT', // short day name in rfc850-date
      'Sunday, 06-Nov-1994 08:49:37 GMT', // four-digit year in rfc850-date
      'Sun Nov 6 08:49:37 1994', // asctime day needs SP DIGIT or 2DIGIT
      'Sun Nov  6 08:49:37 1994 GMT',
      'Nov  6 08:49:37 1994',
      'Xyz, 06 Nov 1994 08:49:37 GMT', // not a day name
      'Sun, 06 Foo 1994 08:49:37 GMT', // not a month
      'Sun, 31 Feb 1994 08:49:37 GMT', // no such day
      'Sun, 29 Feb 1994 08:49:37 GMT', // not a leap year
      'Sun, 00 Nov 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 24:00:00 GMT',
      'Sun, 06 Nov 1994 08:60:00 GMT',
      'Sun, 06 Nov 1994 08:49:61 GMT',
      'Thu, 01 Jan 2026 00:00:00 GMT, Fri, 02 Jan 2026 00:00:00 GMT', // two values
    ];
    for (const v of invalid) expect(parseHttpDate(v, NOW), v).toBeUndefined();
    expect(parseHttpDate(undefined)).toBeUndefined();
  });

  it('accepts a leap second and a real 29 February', () => {
    expect(parseHttpDate('Sat, 31 Dec 2016 23:59:60 GMT', NOW)).toBe(Date.UTC(2017, 0, 1));
    expect(parseHttpDate('Tue, 29 Feb 2000 12:00:00 GMT', NOW)).toBe(Date.UTC(2000, 1, 29, 12));
  });

  it('matches names case-insensitively, as RFC 9111 §4.2 asks of caches', () => {
    expect(parseHttpDate('sun, 06 nov 1994 08:49:37 gmt', NOW)).toBe(T);
    expect(parseHttpDate('SUNDAY, 06-NOV-94 08:49:37 GMT', NOW)).toBe(T);
  });

  it('reads a two-digit year more than 50 years ahead as the most recent past year with those digits', () => {
    // In 2026: "76" would be 2076 (50 years ahead, allowed); "77" would be 2077 → 1977.
    expect(new Date(parseHttpDate('Friday, 01-Jan-76 00:00:00 GMT', NOW)!).getUTCFullYear()).toBe(
      2076,
    );
    expect(new Date(parseHttpDate('Saturday, 01-Jan-77 00:00:00 GMT', NOW)!).getUTCFullYear()).toBe(
      1977,
    );
    expect(new Date(parseHttpDate('Monday, 01-Jan-30 00:00:00 GMT', NOW)!).getUTCFullYear()).toBe(
      2030,
    );
  });
});
