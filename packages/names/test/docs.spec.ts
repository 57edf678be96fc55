// docs/names.md and docs/errors.md stay true: every error code is listed in both, and the two
// examples tables of docs/names.md are what the codec does.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  coralizeHost,
  NAMES_ERROR_CODES,
  originOfUrl,
  originUrlOf,
  parseCoralName,
  type Form,
} from '../src/index.js';

const doc = (name: string) =>
  readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');
const names = doc('names.md');
const Z = 'nyud.net';

/** Rows of the markdown table that follows `heading` (a line of the doc). */
function table(after: string): string[][] {
  const start = names.indexOf(after);
  expect(start, after).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of names.slice(start).split('\n').slice(1)) {
    if (rows.length > 0 && !line.startsWith('|')) break;
    if (!line.startsWith('|') || line.startsWith('|---')) continue;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
  }
  return rows.slice(1); // header
}
const unquote = (cell: string) => /`([^`]*)`/.exec(cell)?.[1] ?? cell;

describe('docs', () => {
  it('lists every error code in docs/names.md and in the docs/errors.md index', () => {
    const index = doc('errors.md');
    for (const code of Object.keys(NAMES_ERROR_CODES)) {
      expect(names, code).toContain(`| \`${code}\` |`);
      expect(index, code).toContain(`\`${code}\``);
    }
  });

  it('docs/architecture.md links the package document', () => {
    expect(doc('architecture.md')).toContain('[names.md](names.md)');
  });

  const examples = table('Checked by `packages/names/test/docs.spec.ts`');
  it('has the examples table', () => expect(examples.length).toBeGreaterThan(20));
  for (const [url, form, want] of examples) {
    it(`example: ${url} (${form}) → ${want}`, () => {
      const run = () => {
        const { origin } = originOfUrl(unquote(url!));
        return coralizeHost(origin, Z, { form: form as Form });
      };
      const rejected = /^rejected: `([A-Z0-9_]+)`$/.exec(want!);
      if (rejected) {
        expect(run).toThrow(expect.objectContaining({ code: rejected[1] }));
        return;
      }
      const name = unquote(want!);
      expect(run()).toBe(name);
      const back = parseCoralName(name, [Z]);
      expect(back).toMatchObject({ kind: 'origin', form });
      if (back.kind === 'origin')
        expect(originUrlOf(back, '')).toBe(originUrlOf(originOfUrl(unquote(url!)).origin, ''));
    });
  }

  const meanings = table('What a name under the zone means');
  it('has the names table', () => expect(meanings.length).toBeGreaterThan(10));
  for (const [nameCell, means] of meanings) {
    it(`name: ${nameCell} → ${means}`, () => {
      const r = parseCoralName(unquote(nameCell!), [Z]);
      const origin = /^origin `([^`]+)` (legacy|one-label)$/.exec(means!);
      const invalid = /^invalid `([A-Z0-9_]+)`$/.exec(means!);
      if (origin) {
        expect(r).toMatchObject({ kind: 'origin', form: origin[2] });
        if (r.kind === 'origin') expect(originUrlOf(r, '')).toBe(`${origin[1]}/`);
      } else if (invalid) {
        expect(r).toMatchObject({ kind: 'invalid', code: invalid[1] });
      } else {
        expect(r.kind).toBe(means);
      }
    });
  }
});
