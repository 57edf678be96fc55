import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as errors from '../src/errors.js';

describe('error codes', () => {
  it('are unique and each one is documented in docs/dsht.md', () => {
    const doc = readFileSync(
      fileURLToPath(new URL('../../../docs/dsht.md', import.meta.url)),
      'utf8',
    );
    const section = doc.slice(doc.indexOf('## Error codes'));
    expect(new Set(errors.ERROR_CODES).size).toBe(errors.ERROR_CODES.length);
    for (const code of errors.ERROR_CODES) expect(section).toContain(`\`${code}\``);
  });

  it('every error class carries its code', () => {
    const made = [
      new errors.MalformedMessageError('x'),
      new errors.MessageTooLargeError(2000, 1200),
      new errors.RpcTimeoutError('PING', '1.2.3.4:5', 3),
      new errors.RemoteError(1, 'x'),
      new errors.AbortedError(),
      new errors.InvalidArgumentError('x'),
      new errors.NotRunningError(),
      new errors.PutRejectedError('x'),
      new errors.TransportError('x'),
    ];
    expect(made.map((e) => e.code).sort()).toEqual([...errors.ERROR_CODES].sort());
    for (const e of made) expect(e).toBeInstanceOf(errors.DshtError);
  });
});
