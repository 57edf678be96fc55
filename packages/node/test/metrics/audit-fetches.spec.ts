/**
 * The member audit's origin requests are counted apart from the fetches made for clients
 * (issue 31: bench:soak's origin fetches per object leave the audit's refetches out by this).
 */
import { describe, expect, it } from 'vitest';
import { CoralMetrics } from '../../src/metrics/metrics.js';

describe('coral_member_audit_fetches_total', () => {
  it('counts the audit’s origin requests, not in coral_origin_fetches_total; bytes in both’s total', async () => {
    const metrics = new CoralMetrics({ defaultMetrics: false });
    const before = await metrics.text();
    expect(before).toMatch(/^coral_member_audit_fetches_total\{outcome="ok"\} 0$/m);
    expect(before).toMatch(/^coral_member_audit_fetches_total\{outcome="error"\} 0$/m);
    metrics.proxy.originFetch(1_000, true);
    metrics.proxy.auditFetch(400, true);
    metrics.proxy.auditFetch(0, false);
    const text = await metrics.text();
    expect(text).toMatch(/^coral_origin_fetches_total\{outcome="ok"\} 1$/m);
    expect(text).not.toMatch(/^coral_origin_fetches_total\{outcome="error"\}/m);
    expect(text).toMatch(/^coral_member_audit_fetches_total\{outcome="ok"\} 1$/m);
    expect(text).toMatch(/^coral_member_audit_fetches_total\{outcome="error"\} 1$/m);
    expect(text).toMatch(/^coral_origin_fetch_bytes_total 1400$/m);
  });
});
