/**
 * What a purge selects, as pure functions over a stored response's metadata (httpprx's
 * `StoredMeta`: its normalized URL and stored response head):
 *
 * - `url`: every variant of one URL (normalized as the proxy keys it: lowercase scheme and host,
 *   default port dropped, fragment removed);
 * - `prefix`: every URL that starts with an absolute http(s) URL prefix, normalized the same way
 *   (`http://www.example.com/img/` selects `/img/a.png` and `/img/b/c.png`; the authority always
 *   ends the prefix's host, so `http://example.com` never selects `http://example.com.evil/`);
 * - `tag`: every response whose origin tagged it (Varnish xkey / Fastly `Surrogate-Key`: tags
 *   separated by spaces; Cloudflare `Cache-Tag`: tags separated by commas; a repeated field, which
 *   the proxy joins with ", ", splits the same way). Tags compare exactly.
 */
import { normalizeUrl } from '@coral/httpprx';

export type PurgeKind = 'url' | 'prefix' | 'tag';

export interface PurgeSpec {
  kind: PurgeKind;
  value: string;
}

/** What the matcher reads of a stored response. */
export interface PurgeCandidate {
  url: string;
  headers: Record<string, string>;
  storedAt: number;
}

/** Longest tag accepted (Fastly's limit on one surrogate key is 1 KB). */
export const MAX_TAG_LENGTH = 1024;

/** Tags of a stored response: `Surrogate-Key` (space-separated) and `Cache-Tag` (comma-separated), repeated fields joined. */
export function responseTags(headers: Record<string, string>): Set<string> {
  const tags = new Set<string>();
  // A response with several Surrogate-Key (or Cache-Tag) fields reaches us joined with ", "
  // (RFC 9110 §5.3): both headers split on spaces and commas (no tag holds either).
  for (const name of ['surrogate-key', 'cache-tag']) {
    for (const t of (headers[name] ?? '').split(/[\s,]+/)) if (t) tags.add(t);
  }
  return tags;
}

/**
 * The spec in canonical form (URLs and prefixes normalized); throws a plain Error with a message
 * for the caller to wrap when the value cannot be used.
 */
export function canonicalSpec(spec: PurgeSpec): PurgeSpec {
  switch (spec.kind) {
    case 'url':
      return { kind: 'url', value: normalizeUrl(spec.value) };
    case 'prefix': {
      const u = new URL(spec.value);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') {
        throw new Error(
          `prefix must be an absolute http(s) URL, got ${JSON.stringify(spec.value)}`,
        );
      }
      if (u.username || u.password) throw new Error('prefix must not carry userinfo');
      return { kind: 'prefix', value: normalizeUrl(spec.value) };
    }
    case 'tag': {
      const v = spec.value;
      if (v.length === 0 || v.length > MAX_TAG_LENGTH || /[\s,]/.test(v)) {
        throw new Error(
          `a tag is 1 to ${MAX_TAG_LENGTH} characters with no space or comma, got ${JSON.stringify(v.slice(0, 64))}`,
        );
      }
      return { kind: 'tag', value: v };
    }
  }
}

/**
 * A predicate selecting what `spec` (canonical) purges, among responses stored before `before`
 * (clock time, ms; `Infinity`: everything stored).
 */
export function purgeMatcher(
  spec: PurgeSpec,
  before = Infinity,
): (meta: PurgeCandidate) => boolean {
  const stored = (m: PurgeCandidate) => m.storedAt < before;
  switch (spec.kind) {
    case 'url':
      return (m) => stored(m) && m.url === spec.value;
    case 'prefix':
      return (m) => stored(m) && m.url.startsWith(spec.value);
    case 'tag':
      return (m) => stored(m) && responseTags(m.headers).has(spec.value);
  }
}
