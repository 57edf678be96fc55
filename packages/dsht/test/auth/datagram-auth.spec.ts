import { Keyring } from '@coral/keyring';
import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import {
  DatagramAuth,
  type DatagramAuthComponents,
  type IsolationState,
} from '../../src/auth/datagram-auth.js';
import { AUTH_BYTES, WIRE_VERSION_KEYED } from '../../src/constants.js';

// Key = bytes 0..31 (id 630dcd29). The frame and its MAC were computed independently:
// HMAC-SHA-256 under HKDF(key, "coral-keyring-v1", "coral-dsht-datagram-v1") over everything
// before the tag (version, key id, timestamp 1700000000000, nonce 00..07, payload, 5 zero pad bytes).
const KEY = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const VECTOR =
  '03630dcd29018bcfe568000001020304050607930102030000000000756bd83d4859200297ea62f3d77d2ac6';
const PAYLOAD = [0x93, 1, 2, 3, 0, 0, 0, 0, 0];
const T0 = 1_700_000_000_000;

function setup(
  keys: string[] | undefined,
  now = T0,
  hooks: Pick<DatagramAuthComponents, 'onIsolation' | 'onUnknownKey'> = {},
) {
  const clock = new ManualClock(now);
  const keyring = keys ? Keyring.parse(keys) : undefined;
  return {
    clock,
    keyring,
    auth: new DatagramAuth({ clock, keyring, ...hooks }, { isolationAfterMs: 30_000 }),
  };
}

describe('DatagramAuth', () => {
  it('opens a fixed keyed vector and refuses every single-byte change of it', () => {
    const { auth } = setup([KEY]);
    const frame = Uint8Array.from(Buffer.from(VECTOR, 'hex'));
    expect([...(auth.open(frame) as Uint8Array)]).toEqual(PAYLOAD);
    expect(auth.open(frame)).toBe('replayed');
    for (let i = 0; i < frame.length; i++) {
      const bad = frame.slice();
      bad[i]! ^= 0x01;
      const { auth: fresh } = setup([KEY]);
      const r = fresh.open(bad);
      expect(typeof r, `byte ${i}`).toBe('string');
      // The version byte and the key id fail before the MAC is computed.
      expect(r).toBe(i === 0 ? 'unauthenticated' : i < 5 ? 'unknownKey' : 'badMac');
    }
  });

  it('seals what it opens, padded, adding AUTH_BYTES', () => {
    const { auth } = setup([KEY]);
    const payload = Uint8Array.from([0x93, 4, 5, 6]);
    const plain = auth.seal(payload);
    expect(plain[0]).toBe(WIRE_VERSION_KEYED);
    expect(plain.length).toBe(1 + AUTH_BYTES + payload.length);
    const padded = auth.seal(payload, 300);
    expect(padded.length).toBe(300);
    const { auth: peer } = setup([KEY]);
    expect([...(peer.open(plain) as Uint8Array)]).toEqual([...payload]);
    const opened = peer.open(padded) as Uint8Array;
    expect([...opened.subarray(0, 4)]).toEqual([...payload]);
    expect(opened.subarray(4).every((b) => b === 0)).toBe(true);
    expect(auth.counters.authBytesSent / auth.counters.sealed).toBe(AUTH_BYTES);
  });

  it('drops, by reason, what a keyed node must not parse', async () => {
    const { auth: a } = setup([KEY]);
    const { auth: b, clock } = setup([KEY]);
    const { auth: stranger } = setup([Keyring.generateKey()]);
    const { auth: open } = setup(undefined);
    const payload = Uint8Array.from([0x93, 1, 2, 3]);
    expect(b.open(open.seal(payload))).toBe('unauthenticated');
    expect(b.open(Uint8Array.from([1, 0x93, 1, 2, 3]))).toBe('unauthenticated'); // wire v1
    expect(b.open(new Uint8Array(0))).toBe('unauthenticated');
    expect(b.open(a.seal(payload).subarray(0, 30))).toBe('unauthenticated'); // truncated
    expect(b.open(stranger.seal(payload))).toBe('unknownKey');
    const late = a.seal(payload);
    await clock.advance(60_001);
    expect(b.open(late)).toBe('stale');
    expect(b.counters).toMatchObject({
      unauthenticated: 4,
      unknownKey: 1,
      stale: 1,
      accepted: 0,
    });
    // An open node drops keyed datagrams as the wrong mode and accepts open ones.
    expect(open.open(a.seal(payload))).toBe('wrongMode');
    expect([...(open.open(open.seal(payload)) as Uint8Array)]).toEqual([...payload]);
  });

  it('follows the keyring through a rotation: install, use, remove', () => {
    const A = Keyring.generateKey();
    const B = Keyring.generateKey();
    const x = setup([A]);
    const y = setup([A]);
    const p = Uint8Array.from([0x90]);
    const refresh = (s: typeof x) => s.keyring!.on('change', () => s.auth.refreshKeys());
    refresh(x);
    refresh(y);
    y.keyring!.install(B);
    expect(y.auth.open(x.auth.seal(p))).not.toBeTypeOf('string'); // A still verifies
    x.keyring!.install(B);
    x.keyring!.use(Keyring.keyId(B));
    expect(y.auth.open(x.auth.seal(p))).not.toBeTypeOf('string'); // B verifies before y uses it
    y.keyring!.use(Keyring.keyId(B));
    y.keyring!.remove(Keyring.keyId(A));
    expect(x.auth.open(y.auth.seal(p))).not.toBeTypeOf('string');
    const stale = setup([A]);
    expect(y.auth.open(stale.auth.seal(p))).toBe('unknownKey');
  });

  it('reports isolation when only unknown key ids are heard, naming them, and recovers', async () => {
    const A = Keyring.generateKey();
    const B = Keyring.generateKey();
    const changes: IsolationState[] = [];
    const me = setup([A], T0, { onIsolation: (s) => changes.push(s) });
    const fleet = setup([B]);
    const p = Uint8Array.from([0x90]);
    // Unknown-key traffic alone, right after start: not yet (authenticated traffic may come).
    for (let i = 0; i < 5; i++) me.auth.open(fleet.auth.seal(p));
    expect(me.auth.isolation().isolated).toBe(false);
    await me.clock.advance(31_000);
    await fleet.clock.advance(31_000);
    me.auth.evaluate();
    expect(me.auth.isolation().isolated).toBe(false); // nothing heard lately
    me.auth.open(fleet.auth.seal(p));
    const state = me.auth.isolation();
    expect(state.isolated).toBe(true);
    expect(state.unknownKeyIds).toEqual([Keyring.keyId(B)]);
    expect(state.reason).toContain(Keyring.keyId(B));
    expect(state.reason).toContain(Keyring.keyId(A));
    expect(changes.map((c) => c.isolated)).toEqual([true]);
    // The operator installs B: the next authenticated datagram ends the isolation.
    me.keyring!.install(B);
    me.auth.refreshKeys();
    me.auth.open(fleet.auth.seal(p));
    expect(me.auth.isolation()).toMatchObject({ isolated: false, unknownKeyIds: [] });
    expect(changes.map((c) => c.isolated)).toEqual([true, false]);
  });

  it('asks for isolation checks only while unknown-key datagrams are being judged', async () => {
    const A = Keyring.generateKey();
    const B = Keyring.generateKey();
    let wakes = 0;
    const me = setup([A], T0, { onUnknownKey: () => wakes++ });
    const friend = setup([A]);
    const stranger = setup([B]);
    const p = Uint8Array.from([0x90]);
    // Its own fleet's datagrams: nothing to judge, no check asked for.
    for (let i = 0; i < 3; i++) me.auth.open(friend.auth.seal(p));
    expect(me.auth.judging).toBe(false);
    expect(wakes).toBe(0);
    // A datagram under a key id it lacks: judging, and a check is asked for.
    me.auth.open(stranger.auth.seal(p));
    expect(me.auth.judging).toBe(true);
    expect(wakes).toBe(1);
    // An authenticated datagram ends it.
    me.auth.open(friend.auth.seal(p));
    expect(me.auth.judging).toBe(false);
    // Unknown-key datagrams that stopped coming stop counting once out of the window.
    me.auth.open(stranger.auth.seal(p));
    expect(me.auth.judging).toBe(true);
    await me.clock.advance(31_000);
    expect(me.auth.judging).toBe(false);
  });
});
