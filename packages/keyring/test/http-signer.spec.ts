import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { HttpPeerSigner, Keyring, PEER_AUTH_HEADER } from '../src/index.js';

const HEX = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const REQ = { method: 'GET', authority: 'www.example.com.nyud.net:8090', path: '/a.jpg?x=1' };

function setup(keys: string[] = [HEX], now = 1_700_000_000_000) {
  const clock = new ManualClock(now);
  const keyring = Keyring.parse(keys);
  return { clock, keyring, signer: new HttpPeerSigner({ keyring, clock }) };
}

describe('HttpPeerSigner', () => {
  it('verifies a fixed vector (header computed independently)', () => {
    const { signer } = setup();
    const header =
      'v1;kid=630dcd29;ts=1700000000000;nonce=BwcHBwcHBwcHBwcHBwcHBw;mac=D1BTOeheiufeUpbxoYrZrw';
    expect(signer.verify({ ...REQ, header })).toBe('ok');
    expect(signer.verify({ ...REQ, header })).toBe('replayed');
    // Method and authority are case-normalised; the path is not.
    const { signer: s2 } = setup();
    expect(
      s2.verify({ ...REQ, method: 'get', authority: 'WWW.Example.com.nyud.net:8090', header }),
    ).toBe('ok');
    expect(PEER_AUTH_HEADER).toBe('Coral-Peer-Auth');
  });

  it('signs what it verifies, and binds method, authority and path', () => {
    const { signer, keyring, clock } = setup([Keyring.generateKey()]);
    const other = new HttpPeerSigner({ keyring, clock });
    const header = signer.sign(REQ);
    expect(header).toMatch(/^v1;kid=[0-9a-f]{8};ts=\d+;nonce=[\w-]{22};mac=[\w-]{22}$/);
    expect(other.verify({ ...REQ, method: 'HEAD', header })).toBe('bad-mac');
    expect(other.verify({ ...REQ, authority: 'evil.nyud.net:8090', header })).toBe('bad-mac');
    expect(other.verify({ ...REQ, path: '/a.jpg?x=2', header })).toBe('bad-mac');
    expect(other.verify({ ...REQ, header })).toBe('ok');
    expect(other.counters).toMatchObject({ ok: 1, 'bad-mac': 3 });
  });

  it('refuses missing, malformed, tampered, unknown-key, stale and replayed headers', async () => {
    const { signer, clock } = setup();
    const header = signer.sign(REQ);
    const tamper = (h: string, i: number) =>
      h.slice(0, i) + (h[i] === 'A' ? 'B' : 'A') + h.slice(i + 1);
    expect(signer.verify({ ...REQ, header: undefined })).toBe('missing');
    expect(signer.verify({ ...REQ, header: '' })).toBe('missing');
    for (const bad of ['v2;kid=1', header + ';x=1', header.replace('ts=', 'ts=-'), 'garbage'])
      expect(signer.verify({ ...REQ, header: bad })).toBe('malformed');
    expect(signer.verify({ ...REQ, path: '/a\r\nX: 1', header })).toBe('malformed');
    const macAt = header.indexOf('mac=') + 6;
    expect(signer.verify({ ...REQ, header: tamper(header, macAt) })).toBe('bad-mac');
    const nonceAt = header.indexOf('nonce=') + 8;
    expect(signer.verify({ ...REQ, header: tamper(header, nonceAt) })).toBe('bad-mac');
    const otherKey = new HttpPeerSigner({ keyring: Keyring.parse([Keyring.generateKey()]), clock });
    expect(otherKey.verify({ ...REQ, header })).toBe('unknown-key');
    expect(signer.verify({ ...REQ, header })).toBe('ok');
    expect(signer.verify({ ...REQ, header })).toBe('replayed');
    const late = signer.sign(REQ);
    await clock.advance(60_001);
    expect(signer.verify({ ...REQ, header: late })).toBe('stale');
  });

  it('keeps verifying through a rotation: install, use, remove', () => {
    const a = Keyring.generateKey();
    const b = Keyring.generateKey();
    const x = setup([a]);
    const y = setup([a]);
    const fromA = x.signer.sign(REQ);
    y.keyring.install(b);
    expect(y.signer.verify({ ...REQ, header: fromA })).toBe('ok');
    x.keyring.install(b);
    x.keyring.use(Keyring.keyId(b));
    const fromB = x.signer.sign(REQ);
    expect(fromB).toContain(`kid=${Keyring.keyId(b)}`);
    expect(y.signer.verify({ ...REQ, header: fromB })).toBe('ok');
    y.keyring.use(Keyring.keyId(b));
    y.keyring.remove(Keyring.keyId(a));
    expect(y.signer.verify({ ...REQ, header: x.signer.sign(REQ) })).toBe('ok');
    // A node still on key A alone is refused.
    const stale = setup([a]);
    expect(y.signer.verify({ ...REQ, header: stale.signer.sign(REQ) })).toBe('unknown-key');
  });
});
