/**
 * The version of `@coral/node`, read once from its package.json (the file sits beside `src/` and
 * `dist/` alike, so sources under vitest and the built CLI see the same one).
 */
import { readFileSync } from 'node:fs';

export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
