import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_FIELDS, envName } from '../src/config/index.js';
import { ERROR_CODES } from '../src/errors.js';

const doc = (name: string) =>
  readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');

describe('docs', () => {
  it('lists every error code in docs/node.md and in the docs/errors.md index', () => {
    const node = doc('node.md');
    const index = doc('errors.md');
    for (const code of ERROR_CODES) {
      expect(node, code).toContain(`\`${code}\``);
      expect(index, code).toContain(`\`${code}\``);
    }
  });

  it('documents every configuration field and its environment variable', () => {
    const config = doc('configuration.md');
    for (const [path] of ENV_FIELDS) {
      expect(config, path).toContain(`| \`${path}\` | \`${envName(path)}\` |`);
    }
  });
});
