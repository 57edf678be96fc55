import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { issueCert, makeTestCa } from '../src/index.js';

describe('makeTestCa', () => {
  it('makes a runtime CA named "Coral test CA" unless told otherwise, which issues leaves', async () => {
    const ca = await makeTestCa();
    expect(ca.subject).toBe('CN=Coral test CA');
    expect((await makeTestCa({ name: 'origin CA' })).subject).toBe('CN=origin CA');
    const leaf = await issueCert(ca, { dnsNames: ['a.test'] });
    expect(new X509Certificate(leaf.cert).checkIssued(new X509Certificate(ca.cert))).toBe(true);
  });
});
