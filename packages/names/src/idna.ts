/**
 * UTS #46 processing through `tr46` (the implementation behind whatwg-url and jsdom), with the
 * two fixed option sets this package needs.
 *
 * Why not Node's `url.domainToASCII` / `domainToUnicode`: they apply WHATWG's fixed flags only
 * (CheckHyphens off), return '' with no way to tell which rule failed, and cannot validate a
 * single label with CheckHyphens on, which is exactly what the one-label form must guarantee.
 * Node's own `punycode` module is deprecated (DEP0040).
 */
import { toASCII, toUnicode } from 'tr46';

/**
 * Hosts as browsers accept them (WHATWG URL's "domain to ASCII"): nontransitional, Bidi and
 * ContextJ rules on, CheckHyphens off (reserved-LDH labels such as `r3---sn-x.googlevideo.com`
 * exist on the web), STD3 off (`_` is accepted in labels as by every browser).
 */
const HOST = {
  checkHyphens: false,
  checkBidi: true,
  checkJoiners: true,
  useSTD3ASCIIRules: false,
  transitionalProcessing: false,
} as const;

/**
 * The one label Coral makes: as HOST, plus CheckHyphens (no `--` at positions 3–4 unless it is
 * an A-label, no leading or trailing hyphen), so it is a valid label for DNS and certificates.
 */
const LABEL = { ...HOST, checkHyphens: true } as const;

export function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** UTS #46 ToASCII of a host as browsers do it, or null when it is not a valid IDN host. */
export function hostToAscii(host: string): string | null {
  return toASCII(host, HOST);
}

/** UTS #46 ToUnicode of a host as browsers do it, or null when it has an invalid label. */
export function hostToUnicode(host: string): string | null {
  const r = toUnicode(host, HOST);
  return r.error ? null : r.domain;
}

/** ToASCII of one label Coral made, with CheckHyphens on; null when it is not a valid label. */
export function labelToAscii(label: string): string | null {
  return toASCII(label, LABEL);
}

/** ToUnicode of one A-label of a one-label name, with CheckHyphens on; null when invalid. */
export function labelToUnicode(label: string): string | null {
  const r = toUnicode(label, LABEL);
  return r.error ? null : r.domain;
}

/**
 * Which UTS #46 rule a label (in Unicode) breaks, for an error message: turn each check off in
 * turn and see which one makes it pass.
 */
export function whyLabelInvalid(label: string): string {
  if (toASCII(label, { ...LABEL, checkBidi: false }) !== null) {
    return 'it would break the IDNA Bidi rule (RFC 5893): right-to-left text may not be mixed with left-to-right letters or begin with a digit in one label';
  }
  if (toASCII(label, { ...LABEL, checkJoiners: false }) !== null) {
    return 'it would break the IDNA ContextJ rules (RFC 5892 Appendix A)';
  }
  if (toASCII(label, { ...LABEL, checkHyphens: false }) !== null) {
    return 'it would have hyphens where IDNA forbids them';
  }
  return 'it is not a valid IDNA label';
}
