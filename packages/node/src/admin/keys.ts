/**
 * How the admin API and the CLI name DSHT keys and show values. A key is given either as 40 hex
 * characters (the raw 160-bit key) or as a name, which becomes SHA-1 of its UTF-8 bytes, the
 * DSHT's key derivation (`url:http://...`, `net:203.0.113.0/24`, or any name of your own).
 */
import { createHash } from 'node:crypto';
import { decodeHolder, type HolderRecord } from '../adapters/holder-codec.js';

export function parseKey(text: string): Uint8Array {
  if (/^[0-9a-f]{40}$/i.test(text)) return new Uint8Array(Buffer.from(text, 'hex'));
  return new Uint8Array(createHash('sha1').update(text, 'utf8').digest());
}

export interface ValueView {
  base64: string;
  /** The value as text, when it is printable UTF-8. */
  text?: string;
  /** The value decoded as a proxy's holder record, when it is one. */
  holder?: HolderRecord;
}

export function viewValue(value: Uint8Array): ValueView {
  const buf = Buffer.from(value.buffer, value.byteOffset, value.length);
  const view: ValueView = { base64: buf.toString('base64') };
  const text = buf.toString('utf8');
  if (Buffer.from(text, 'utf8').equals(buf) && isPrintable(text)) view.text = text;
  try {
    view.holder = decodeHolder(value);
  } catch {
    // not a holder record: shown as text or base64 only
  }
  return view;
}

export function decodeValue(value: string, encoding: 'utf8' | 'base64' | 'hex'): Uint8Array {
  return new Uint8Array(Buffer.from(value, encoding));
}

/** No control characters other than tab, newline and carriage return. */
function isPrintable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f) return false;
  }
  return true;
}
