import { describe, expect, it, vi } from 'vitest';
import { Keyring, KeyringError, decodeKey, type KeyringChange } from '../src/index.js';

// Fixed vector: key = bytes 0..31; id = first 4 bytes of SHA-256(key) (computed independently).
const HEX = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const B64 = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=';
const B64URL = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8';
const ID = '630dcd29';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(KeyringError);
    return (err as KeyringError).code;
  }
  return undefined;
}

describe('Keyring', () => {
  it('parses hex, base64 and base64url to the same key and id', () => {
    for (const written of [HEX, HEX.toUpperCase(), B64, B64URL, `  ${HEX}\n`]) {
      const ring = Keyring.parse([written]);
      expect(ring.primaryId).toBe(ID);
      expect(ring.list()).toEqual([{ id: ID, primary: true }]);
    }
    expect(Keyring.keyId(B64URL)).toBe(ID);
    expect([...decodeKey(HEX)]).toEqual([...Array(32).keys()]);
  });

  it('refuses bad keys with a stable code and names the entry, never the secret', () => {
    const good = Keyring.generateKey();
    const bad = ['', 'abc', HEX.slice(2), HEX + '00', 'zz' + HEX.slice(2), B64.slice(1)];
    for (const b of bad) {
      let err: KeyringError | undefined;
      try {
        Keyring.parse([good, b]);
      } catch (e) {
        err = e as KeyringError;
      }
      expect(err?.code, JSON.stringify(b)).toBe('KEYRING_ERR_INVALID_KEY');
      expect(err?.message).toContain('key #2 of 2');
      expect(err?.message).not.toContain(good);
      if (b.length > 8) expect(err?.message).not.toContain(b);
    }
    expect(codeOf(() => Keyring.parse([]))).toBe('KEYRING_ERR_EMPTY');
    expect(codeOf(() => Keyring.parse([42 as unknown as string]))).toBe('KEYRING_ERR_INVALID_KEY');
  });

  it('generates distinct 64-hex keys; duplicates of one key collapse', () => {
    const a = Keyring.generateKey();
    const b = Keyring.generateKey();
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
    const ring = Keyring.parse([a, b, a.toUpperCase()]);
    expect(ring.list().map((k) => k.id)).toEqual([Keyring.keyId(a), Keyring.keyId(b)]);
  });

  it('rotates like memberlist: install, use, remove; the primary cannot be removed', () => {
    const a = Keyring.generateKey();
    const b = Keyring.generateKey();
    const ring = Keyring.parse([a]);
    const changes: KeyringChange[] = [];
    ring.on('change', (c) => changes.push(c));
    const idA = Keyring.keyId(a);
    const idB = ring.install(b);
    expect(ring.install(b)).toBe(idB); // no-op, no event
    expect(ring.list()).toEqual([
      { id: idA, primary: true },
      { id: idB, primary: false },
    ]);
    expect(codeOf(() => ring.remove(idA))).toBe('KEYRING_ERR_PRIMARY');
    ring.use(idB);
    expect(ring.primaryId).toBe(idB);
    ring.remove(idA);
    expect(ring.has(idA)).toBe(false);
    expect(ring.derive(idA, 'x')).toBeUndefined();
    expect(codeOf(() => ring.use(idA))).toBe('KEYRING_ERR_UNKNOWN_KEY');
    expect(codeOf(() => ring.remove('nothex'))).toBe('KEYRING_ERR_UNKNOWN_KEY');
    expect(changes.map((c) => [c.kind, c.id, c.primaryId, c.ids])).toEqual([
      ['install', idB, idA, [idA, idB]],
      ['use', idB, idB, [idB, idA]],
      ['remove', idA, idB, [idB]],
    ]);
  });

  it('replace() swaps every key at once, or nothing on a bad list', () => {
    const a = Keyring.generateKey();
    const b = Keyring.generateKey();
    const ring = Keyring.parse([a]);
    const onChange = vi.fn();
    ring.on('change', onChange);
    expect(codeOf(() => ring.replace([b, 'junk']))).toBe('KEYRING_ERR_INVALID_KEY');
    expect(ring.primaryId).toBe(Keyring.keyId(a));
    expect(onChange).not.toHaveBeenCalled();
    ring.replace([b, a]);
    expect(ring.list().map((k) => k.primary)).toEqual([true, false]);
    expect(ring.primaryId).toBe(Keyring.keyId(b));
    expect(onChange).toHaveBeenCalledOnce();
  });

  it('derives one cached HKDF subkey per key and purpose (fixed vector)', () => {
    const ring = Keyring.parse([HEX]);
    const k = ring.derive(ID, 'coral-http-peer-v1')!;
    // HKDF-SHA-256(ikm = key, salt = "coral-keyring-v1", info = purpose), computed independently.
    expect(k.export().toString('hex')).toBe(
      'd686ecbf9de0a102239006989394199d9a8c2abfa95f19511c7703fdd3d8b83d',
    );
    expect(ring.derive(ID, 'coral-http-peer-v1')).toBe(k);
    expect(ring.derive(ID, 'coral-dsht-datagram-v1')!.export().toString('hex')).toBe(
      'f27bb2d942f156efc63bc8f0c5e49a2b07bce61ddd3eff99fd92d8faa832c412',
    );
    expect(ring.signing('coral-http-peer-v1')).toEqual({ id: ID, key: k });
  });
});
