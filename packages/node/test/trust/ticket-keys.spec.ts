/**
 * The fleet's TLS session-ticket keys (trust/ticket-keys.ts): derived per rotation epoch from the
 * keyring's primary key, the same on every member, rotated on the injected clock, zeroed when
 * replaced; random per epoch in open mode.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Keyring } from '@coral/keyring';
import { ManualClock } from '@coral/testkit';
import {
  TICKET_KEY_BYTES,
  TICKET_KEY_ROTATION_SECONDS,
  TlsTicketKeys,
  deriveTicketKeys,
  ticketKeyEpoch,
} from '../../src/trust/ticket-keys.js';

const KEY_A = 'a1'.repeat(32);
const KEY_B = 'b2'.repeat(32);
const MINUTE = 60_000;
/** A clock time inside epoch 1000 of one-minute epochs, 10 s before its end. */
const T = 1000 * MINUTE + 50_000;

const zero = Buffer.alloc(TICKET_KEY_BYTES);

describe('deriveTicketKeys', () => {
  it('is 48 bytes, deterministic per (key, epoch), and differs by key and by epoch', () => {
    const a = deriveTicketKeys(Keyring.parse([KEY_A]), 7);
    expect(a).toHaveLength(TICKET_KEY_BYTES);
    expect(deriveTicketKeys(Keyring.parse([KEY_A]), 7).equals(a)).toBe(true);
    expect(deriveTicketKeys(Keyring.parse([KEY_A]), 8).equals(a)).toBe(false);
    expect(deriveTicketKeys(Keyring.parse([KEY_B]), 7).equals(a)).toBe(false);
    // Only the primary key counts: a member still holding the old key as a second one agrees.
    expect(deriveTicketKeys(Keyring.parse([KEY_A, KEY_B]), 7).equals(a)).toBe(true);
    // The three 16-byte parts (name, HMAC secret, AES key) are not one repeated block.
    expect(a.subarray(0, 16).equals(a.subarray(16, 32))).toBe(false);
  });

  it('is the epoch of floor(now / period)', () => {
    expect(ticketKeyEpoch(T, 60)).toBe(1000);
    expect(ticketKeyEpoch(1001 * MINUTE - 1, 60)).toBe(1000);
    expect(ticketKeyEpoch(1001 * MINUTE, 60)).toBe(1001);
    expect(TICKET_KEY_ROTATION_SECONDS).toBe(43_200);
  });
});

describe('TlsTicketKeys', () => {
  it('two members of one fleet hold the same keys and rotate them together at the boundary', async () => {
    const clock = new ManualClock(T);
    const applied: Buffer[][] = [[], []];
    const members = [0, 1].map((i) => {
      const keys = new TlsTicketKeys(
        { clock, keyring: Keyring.parse([KEY_A]) },
        { rotationSeconds: 60 },
      );
      keys.current();
      keys.start((k) => applied[i]!.push(Buffer.from(k)));
      return keys;
    });
    expect(members[0]!.source).toBe('fleet');
    expect(members[0]!.epoch).toBe(1000);
    const first = Buffer.from(members[0]!.current());
    expect(members[1]!.current().equals(first)).toBe(true);
    expect(first.equals(deriveTicketKeys(Keyring.parse([KEY_A]), 1000))).toBe(true);
    expect(applied).toEqual([[], []]); // started with the keys the listener already has

    await clock.advance(9_999); // 1 ms before the boundary
    expect(members[0]!.rotations).toBe(0);
    await clock.advance(1);
    expect(members.map((m) => m.epoch)).toEqual([1001, 1001]);
    const next = deriveTicketKeys(Keyring.parse([KEY_A]), 1001);
    expect(applied[0]!.map((k) => k.equals(next))).toEqual([true]);
    expect(applied[1]!.map((k) => k.equals(next))).toEqual([true]);

    await clock.advance(MINUTE);
    expect(members[0]!.epoch).toBe(1002);
    expect(applied[0]).toHaveLength(2);
    for (const m of members) m.stop();
  });

  it('another fleet key gives other keys; open mode draws random ones for each epoch', async () => {
    const clock = new ManualClock(T);
    const a = new TlsTicketKeys(
      { clock, keyring: Keyring.parse([KEY_A]) },
      { rotationSeconds: 60 },
    );
    const b = new TlsTicketKeys(
      { clock, keyring: Keyring.parse([KEY_B]) },
      { rotationSeconds: 60 },
    );
    expect(a.current().equals(b.current())).toBe(false);
    const open1 = new TlsTicketKeys({ clock }, { rotationSeconds: 60 });
    const open2 = new TlsTicketKeys({ clock }, { rotationSeconds: 60 });
    expect(open1.source).toBe('random');
    const o = Buffer.from(open1.current());
    expect(o.equals(zero)).toBe(false);
    expect(o.equals(open2.current())).toBe(false);
    const applied: Buffer[] = [];
    open1.start((k) => applied.push(Buffer.from(k)));
    await clock.advance(10_000);
    expect(applied).toHaveLength(1);
    expect(applied[0]!.equals(o)).toBe(false);
    open1.stop();
  });

  it('zeroes the keys it replaced, and those it held at stop', async () => {
    const clock = new ManualClock(T);
    const keys = new TlsTicketKeys(
      { clock, keyring: Keyring.parse([KEY_A]) },
      { rotationSeconds: 60 },
    );
    const held = keys.current();
    expect(held.equals(zero)).toBe(false);
    let given: Buffer | undefined;
    keys.start((k) => (given = k));
    await clock.advance(10_000);
    expect(held.equals(zero)).toBe(true);
    expect(given!.equals(zero)).toBe(false);
    keys.stop();
    expect(given!.equals(zero)).toBe(true);
    // Stopped: no timer left, nothing applied any more.
    expect(clock.pending).toBe(0);
  });

  it('swaps the keys at once when the keyring primary changes, not for another change', () => {
    const clock = new ManualClock(T);
    const ring = Keyring.parse([KEY_A]);
    const keys = new TlsTicketKeys({ clock, keyring: ring }, { rotationSeconds: 60 });
    const applied: Buffer[] = [];
    keys.start((k) => applied.push(Buffer.from(k)));
    expect(applied).toHaveLength(1); // nothing asked for before start: applied at start
    const idB = ring.install(KEY_B);
    expect(applied).toHaveLength(1);
    ring.use(idB);
    expect(applied).toHaveLength(2);
    expect(applied[1]!.equals(deriveTicketKeys(Keyring.parse([KEY_B]), 1000))).toBe(true);
    keys.stop();
    ring.use(ring.list()[1]!.id);
    expect(applied).toHaveLength(2);
  });

  it('applies the new epoch at start when the boundary passed after current()', async () => {
    const clock = new ManualClock(T);
    const keys = new TlsTicketKeys(
      { clock, keyring: Keyring.parse([KEY_A]) },
      { rotationSeconds: 60 },
    );
    keys.current();
    await clock.advance(10_000);
    const applied: Buffer[] = [];
    keys.start((k) => applied.push(Buffer.from(k)));
    expect(keys.epoch).toBe(1001);
    expect(applied).toHaveLength(1);
    keys.stop();
  });

  it('status: source, epoch, next rotation and a fingerprint of the key name, never the keys', async () => {
    const clock = new ManualClock(T);
    const ring = Keyring.parse([KEY_A]);
    const keys = new TlsTicketKeys({ clock, keyring: ring }, { rotationSeconds: 60 });
    expect(keys.status()).toBeUndefined();
    const held = keys.current();
    const fp = (k: Buffer) =>
      createHash('sha256').update(k.subarray(0, 16)).digest().subarray(0, 4).toString('hex');
    expect(keys.status()).toEqual({
      source: 'fleet',
      epoch: 1000,
      rotationSeconds: 60,
      fingerprint: fp(held),
      nextRotation: new Date(1001 * MINUTE).toISOString(),
      rotations: 0,
    });
    const twin = new TlsTicketKeys(
      { clock, keyring: Keyring.parse([KEY_A]) },
      { rotationSeconds: 60 },
    );
    const other = new TlsTicketKeys(
      { clock, keyring: Keyring.parse([KEY_B]) },
      { rotationSeconds: 60 },
    );
    twin.current();
    other.current();
    expect(twin.status()!.fingerprint).toBe(keys.status()!.fingerprint);
    expect(other.status()!.fingerprint).not.toBe(keys.status()!.fingerprint);
    const secret = held.toString('hex');
    expect(JSON.stringify(keys.status())).not.toContain(secret.slice(32, 48));
    keys.start(() => undefined);
    await clock.advance(10_000);
    expect(keys.status()).toMatchObject({ epoch: 1001, rotations: 1 });
    expect(keys.status()!.fingerprint).not.toBe(twin.status()!.fingerprint);
    keys.stop();
    expect(keys.status()).toBeUndefined();
  });

  it('refuses a rotation period that is not a positive integer', () => {
    const clock = new ManualClock(T);
    expect(() => new TlsTicketKeys({ clock }, { rotationSeconds: 0 })).toThrow(RangeError);
    expect(() => new TlsTicketKeys({ clock }, { rotationSeconds: 1.5 })).toThrow(
      /positive integer/,
    );
  });
});
