import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DNS_ERROR_CODES, DnsConfigError, DnsListenError, DnsStateError } from '../src/index.js';

describe('error codes', () => {
  it('every code is documented in docs/dnssrv.md "Error codes"', () => {
    const doc = readFileSync(new URL('../../../docs/dnssrv.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Error codes'));
    for (const code of DNS_ERROR_CODES) expect(section).toContain(`\`${code}\``);
  });

  it('each class carries its code', () => {
    expect(new DnsConfigError('x').code).toBe('DNS_ERR_CONFIG');
    expect(new DnsListenError('x').code).toBe('DNS_ERR_LISTEN');
    expect(new DnsStateError('x').code).toBe('DNS_ERR_STATE');
    expect(new DnsConfigError('x')).toBeInstanceOf(Error);
  });
});
