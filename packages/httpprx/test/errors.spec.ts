import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, ProxyError } from '../src/errors.js';

describe('error codes', () => {
  const doc = readFileSync(new URL('../../../docs/httpprx.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Error codes'));

  it('every code is documented with its status in docs/httpprx.md', () => {
    for (const [code, status] of Object.entries(ERROR_CODES)) {
      expect(section).toMatch(new RegExp(`\\| \`${code}\` \\| ${status} \\|`));
    }
  });

  it('the doc lists no code that does not exist', () => {
    const listed = [...section.matchAll(/^\| `(CORAL_[A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it('every code is in the docs/errors.md index with its status', () => {
    const index = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8').replace(
      /\s+/g,
      ' ',
    );
    for (const [code, status] of Object.entries(ERROR_CODES)) {
      expect(index, code).toContain(`\`${code}\` (${status})`);
    }
  });

  it('a ProxyError carries its code and status', () => {
    const e = new ProxyError('CORAL_RATE_LIMITED', 'slow down');
    expect(e.code).toBe('CORAL_RATE_LIMITED');
    expect(e.status).toBe(429);
    expect(e).toBeInstanceOf(Error);
  });
});
