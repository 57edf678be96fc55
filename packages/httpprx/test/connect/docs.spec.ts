import fs from 'node:fs';

import { describe, expect, it } from 'vitest';

import { CONNECT_ERROR_CODES } from '../../src/connect/index.js';

describe('docs/httpprx-connect.md', () => {
  it('lists every connector error code in its "Error codes" section', () => {
    const doc = fs.readFileSync(
      new URL('../../../../docs/httpprx-connect.md', import.meta.url),
      'utf8',
    );
    const section = doc.slice(doc.indexOf('### Error codes'));
    for (const code of CONNECT_ERROR_CODES) expect(section).toContain(`\`${code}\``);
  });
});
