import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONNGUARD_ERROR_CODES } from '../src/index.js';

const doc = (name: string) =>
  readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');

describe('connguard docs', () => {
  it('lists every error code in docs/connguard.md and in the docs/errors.md index', () => {
    for (const code of CONNGUARD_ERROR_CODES) {
      expect(doc('connguard.md'), code).toContain(`\`${code}\``);
      expect(doc('errors.md'), code).toContain(`\`${code}\``);
    }
  });
});
