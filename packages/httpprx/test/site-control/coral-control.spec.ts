import { describe, expect, it } from 'vitest';
import { OPT_OUT_DEFAULT_SECONDS, OPT_OUT_MAX_SECONDS } from '../../src/constants.js';
import { parseCoralControl } from '../../src/site-control/coral-control.js';
import { siteKey, siteOf } from '../../src/site-control/opt-outs.js';

describe('parseCoralControl', () => {
  it('reads redirect-home with and without max-age', () => {
    expect(parseCoralControl('redirect-home')).toEqual({
      kind: 'redirect-home',
      seconds: OPT_OUT_DEFAULT_SECONDS,
    });
    expect(parseCoralControl('redirect-home; max-age=600')).toEqual({
      kind: 'redirect-home',
      seconds: 600,
    });
    expect(parseCoralControl('redirect-home;max-age=0')).toEqual({
      kind: 'redirect-home',
      seconds: 0,
    });
  });

  it('caps max-age and skips unknown directives and parameters', () => {
    expect(parseCoralControl('redirect-home; max-age=99999999')).toEqual({
      kind: 'redirect-home',
      seconds: OPT_OUT_MAX_SECONDS,
    });
    expect(parseCoralControl(['future-thing', 'redirect-home; max-age=5; x=1'])).toEqual({
      kind: 'redirect-home',
      seconds: 5,
    });
    expect(parseCoralControl('something-else')).toEqual({ kind: 'none' });
    expect(parseCoralControl('"redirect-home"')).toEqual({ kind: 'none' });
    expect(parseCoralControl(undefined)).toEqual({ kind: 'none' });
  });

  it('refuses malformed values', () => {
    expect(parseCoralControl('redirect-home; max-age=-1').kind).toBe('invalid');
    expect(parseCoralControl('redirect-home; max-age=1.5').kind).toBe('invalid');
    expect(parseCoralControl('redirect-home; max-age="600"').kind).toBe('invalid');
    expect(parseCoralControl('redirect-home;;').kind).toBe('invalid');
    expect(parseCoralControl('(((').kind).toBe('invalid');
  });
});

describe('sites', () => {
  it('a site is the scheme, host and port of a normalized URL', () => {
    expect(siteOf('http://www.example.com/a/b?c')).toBe('http://www.example.com');
    expect(siteOf('https://example.com:8443/')).toBe('https://example.com:8443');
    expect(siteOf('http://[::1]:81/x')).toBe('http://[::1]:81');
    expect(siteOf('http://example.com')).toBe('http://example.com');
  });

  it('site keys differ per origin and from URL keys', () => {
    expect(Buffer.from(siteKey('http://a.example')).toString('hex')).not.toBe(
      Buffer.from(siteKey('https://a.example')).toString('hex'),
    );
    expect(siteKey('http://a.example')).toHaveLength(20);
  });
});
