/**
 * The verdict of an audit (./auditor.ts): what a member served, against what the origin answers
 * this node itself. Pure. A member *lied* when the origin's copy disagrees with its copy in a
 * way the origin cannot explain:
 *
 * - **bytes**: another size or SHA-256 — always when the origin still names the member's copy by
 *   the same strong ETag (the same representation, other bytes: proof); otherwise only when the
 *   origin did not change it since the member's copy was made (its Last-Modified is not after
 *   the copy's Date) and answers the same bytes twice (a page that differs at every request is
 *   `volatile`, not evidence);
 * - **validators**: the same bytes under another ETag or Last-Modified than the origin's (a
 *   member that invents validators steers the revalidations that would replace its copy);
 * - **freshness**: a declared freshness lifetime above the origin's by more than
 *   `FRESHNESS_TOLERANCE` (the member's copy outlives the origin's wish).
 *
 * Anything the origin itself cannot answer (an error, another status) is `inconclusive`.
 */
import { parseHttpDate } from '../cache/http-date.js';

/** A copy as compared: the response's fields, its body's size and SHA-256, its freshness lifetime. */
export interface AuditedCopy {
  status: number;
  size: number;
  sha256: string;
  etag?: string | undefined;
  lastModified?: string | undefined;
  /** The response's Date. */
  date?: string | undefined;
  /** Freshness lifetime (s) by this node's rules, before any cap. */
  lifetime: number;
}

export type Disagreement = 'bytes' | 'validators' | 'freshness';

export type Verdict =
  | { kind: 'agree' }
  | { kind: 'lied'; disagreements: Disagreement[]; proof: boolean }
  | {
      kind: 'inconclusive';
      reason: 'origin-status' | 'changed' | 'volatile' | 'needs-second-look';
    };

/** Declared freshness this much (s) or this fraction above the origin's is not a disagreement. */
export const FRESHNESS_TOLERANCE = { seconds: 60, fraction: 0.1 };

const strong = (etag: string | undefined) => etag !== undefined && !etag.startsWith('W/');

/**
 * Judge `member` against `origin` (and `again`, a second look at the origin, which a bytes
 * disagreement without proof needs: without it the verdict is `needs-second-look`).
 */
export function judge(member: AuditedCopy, origin: AuditedCopy, again?: AuditedCopy): Verdict {
  if (origin.status !== member.status) return { kind: 'inconclusive', reason: 'origin-status' };
  const disagreements: Disagreement[] = [];
  const sameBytes = (a: AuditedCopy, b: AuditedCopy) => a.size === b.size && a.sha256 === b.sha256;
  const bytes = !sameBytes(member, origin);
  if (
    (member.etag ?? null) !== (origin.etag ?? null) ||
    (member.lastModified ?? null) !== (origin.lastModified ?? null)
  ) {
    disagreements.push('validators');
  }
  const tolerance = Math.max(
    FRESHNESS_TOLERANCE.seconds,
    origin.lifetime * FRESHNESS_TOLERANCE.fraction,
  );
  if (member.lifetime > origin.lifetime + tolerance) disagreements.push('freshness');
  if (!bytes) {
    return disagreements.length === 0
      ? { kind: 'agree' }
      : { kind: 'lied', disagreements, proof: false };
  }
  if (strong(origin.etag) && origin.etag === member.etag) {
    return { kind: 'lied', disagreements: ['bytes', ...disagreements], proof: true };
  }
  const modified = parseHttpDate(origin.lastModified);
  const made = parseHttpDate(member.date);
  if (modified !== undefined && made !== undefined && modified > made) {
    return { kind: 'inconclusive', reason: 'changed' };
  }
  if (!again) return { kind: 'inconclusive', reason: 'needs-second-look' };
  if (!sameBytes(origin, again)) return { kind: 'inconclusive', reason: 'volatile' };
  return { kind: 'lied', disagreements: ['bytes', ...disagreements], proof: false };
}
