/** What a purge selects: URL, prefix (host boundary kept), tags of both headers, stored-before. */
import { describe, expect, it } from 'vitest';
import { canonicalSpec, purgeMatcher, responseTags } from '../../src/purge/match.js';

const meta = (url: string, headers: Record<string, string> = {}, storedAt = 1_000) => ({
  url,
  headers,
  storedAt,
});

describe('purge matching', () => {
  it('reads tags from Surrogate-Key (spaces) and Cache-Tag (commas)', () => {
    expect([...responseTags({ 'surrogate-key': ' a  b\tc ', 'cache-tag': 'd, e ,,f' })]).toEqual([
      'a',
      'b',
      'c',
      'd',
      'e',
      'f',
    ]);
    expect(responseTags({}).size).toBe(0);
    // Two Surrogate-Key fields, as the proxy stores them: joined with ", ".
    expect([...responseTags({ 'surrogate-key': 'a b, c d' })]).toEqual(['a', 'b', 'c', 'd']);
  });

  it('normalizes URLs and prefixes as the proxy keys them, and refuses bad values', () => {
    expect(canonicalSpec({ kind: 'url', value: 'HTTP://WWW.Example.com:80/a#frag' })).toEqual({
      kind: 'url',
      value: 'http://www.example.com/a',
    });
    expect(canonicalSpec({ kind: 'prefix', value: 'https://example.com' }).value).toBe(
      'https://example.com/',
    );
    expect(() => canonicalSpec({ kind: 'prefix', value: 'ftp://example.com/' })).toThrow(/http/);
    expect(() => canonicalSpec({ kind: 'prefix', value: 'http://u:p@example.com/' })).toThrow(
      /userinfo/,
    );
    expect(() => canonicalSpec({ kind: 'url', value: '/relative' })).toThrow();
    expect(() => canonicalSpec({ kind: 'tag', value: 'two words' })).toThrow(/no space or comma/);
    expect(() => canonicalSpec({ kind: 'tag', value: 'a,b' })).toThrow(/no space or comma/);
    expect(() => canonicalSpec({ kind: 'tag', value: 'x'.repeat(1025) })).toThrow(/1 to 1024/);
  });

  it('selects by url, prefix and tag, among responses stored before a time', () => {
    const url = purgeMatcher(canonicalSpec({ kind: 'url', value: 'http://a.test/x' }));
    expect(url(meta('http://a.test/x'))).toBe(true);
    expect(url(meta('http://a.test/x?y'))).toBe(false);
    const prefix = purgeMatcher(canonicalSpec({ kind: 'prefix', value: 'http://a.test' }));
    expect(prefix(meta('http://a.test/deep/path'))).toBe(true);
    expect(prefix(meta('http://a.test.evil/'))).toBe(false);
    expect(prefix(meta('https://a.test/'))).toBe(false);
    const tag = purgeMatcher({ kind: 'tag', value: 'p1' }, 2_000);
    expect(tag(meta('http://a.test/', { 'surrogate-key': 'p1 p2' }, 1_999))).toBe(true);
    expect(tag(meta('http://a.test/', { 'cache-tag': 'p0, p1' }, 1_999))).toBe(true);
    expect(tag(meta('http://a.test/', { 'surrogate-key': 'p1' }, 2_000))).toBe(false); // after
    expect(tag(meta('http://a.test/', { 'surrogate-key': 'p10' }, 1))).toBe(false);
  });
});
