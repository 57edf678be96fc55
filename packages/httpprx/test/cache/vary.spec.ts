import { describe, expect, it } from 'vitest';
import {
  secondaryKey,
  selectingValue,
  varyMatches,
  varyNames,
  varyValues,
} from '../../src/cache/vary.js';

describe('Vary (RFC 9111 §4.1)', () => {
  it('names: lowercase, without repeats or empties, order-insensitive', () => {
    expect(varyNames({ vary: 'Accept-Encoding, ,accept-language, Accept-Encoding' })).toEqual([
      'accept-encoding',
      'accept-language',
    ]);
    expect(varyNames({})).toEqual([]);
  });

  it('whitespace where the syntax allows it; case only for case-insensitive fields', () => {
    expect(selectingValue('accept-language', { 'accept-language': '  FR,  de ' })).toBe('fr,de');
    expect(selectingValue('accept-encoding', { 'accept-encoding': 'GZIP , br' })).toBe('gzip,br');
    // User-Agent, Cookie and unknown fields: case and inner whitespace are significant.
    expect(selectingValue('user-agent', { 'user-agent': ' Mozilla/5.0  (X11) ' })).toBe(
      'Mozilla/5.0  (X11)',
    );
    expect(
      varyMatches(['user-agent'], ['Mozilla/5.0 (X11)'], { 'user-agent': 'mozilla/5.0 (x11)' }),
    ).toBe(false);
    expect(varyMatches(['x-token'], ['AbC'], { 'x-token': 'abc' })).toBe(false);
    expect(varyMatches(['x-token'], ['AbC'], { 'x-token': 'AbC ' })).toBe(true);
    // Accept keeps case (media type parameters may be case-sensitive) but drops OWS.
    expect(selectingValue('accept', { accept: 'text/html ,  Text/Plain;q=0.5' })).toBe(
      'text/html,Text/Plain;q=0.5',
    );
  });

  it('an absent field matches only an absent field, never an empty one', () => {
    expect(varyValues(['x'], {})).toEqual([null]);
    expect(varyValues(['x'], { x: '' })).toEqual(['']);
    expect(varyMatches(['x'], [null], { x: '' })).toBe(false);
    expect(varyMatches(['x'], [''], {})).toBe(false);
    expect(varyMatches(['x'], [null], {})).toBe(true);
  });

  it('secondary keys: zeros without Vary, distinct for absent and empty values', () => {
    expect([...secondaryKey([], [])]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    const a = Buffer.from(secondaryKey(['x'], [null])).toString('hex');
    const b = Buffer.from(secondaryKey(['x'], [''])).toString('hex');
    const c = Buffer.from(secondaryKey(['x'], ['a'])).toString('hex');
    expect(new Set([a, b, c]).size).toBe(3);
    expect(Buffer.from(secondaryKey(['x'], ['a'])).toString('hex')).toBe(c);
  });
});
