import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KEYRING_ERROR_CODES } from '../src/index.js';

const doc = (name: string) =>
  readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');

describe('keyring docs', () => {
  it('lists every error code in docs/security.md and in the docs/errors.md index', () => {
    expect(new Set(KEYRING_ERROR_CODES).size).toBe(KEYRING_ERROR_CODES.length);
    for (const code of KEYRING_ERROR_CODES) {
      expect(doc('security.md'), code).toContain(`\`${code}\``);
      expect(doc('errors.md'), code).toContain(`\`${code}\``);
    }
  });
});
