import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ACCESSLOG_ERROR_CODES } from '../src/index.js';

const doc = (name: string) =>
  readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');

describe('accesslog docs', () => {
  it('lists every error code in docs/accesslog.md and in the docs/errors.md index', () => {
    for (const code of ACCESSLOG_ERROR_CODES) {
      expect(doc('accesslog.md'), code).toContain(`\`${code}\``);
      expect(doc('errors.md'), code).toContain(`\`${code}\``);
    }
  });
});
