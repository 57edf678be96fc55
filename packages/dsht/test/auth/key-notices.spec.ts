/**
 * Key notices, byte for byte (auth/key-notices.ts): the notice a keyed datagram under an unknown
 * key id draws, and which notices count at the node that sent the datagram. Over real sockets:
 * test/adversary/key-notices.spec.ts.
 */
import { Keyring } from '@coral/keyring';
import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { DatagramAuth } from '../../src/auth/datagram-auth.js';
import { KeyNotices, type KeyRejection } from '../../src/auth/key-notices.js';

const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('hex') : undefined);
const bytes = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));

/** A keyed datagram's 19-byte header (key id 1a2b3c4d, timestamp, nonce 0102…08), then junk. */
const DATAGRAM = bytes('03' + '1a2b3c4d' + '00000000abcd' + '0102030405060708' + 'ee'.repeat(17));
const NOTICE = '04' + '1a2b3c4d' + '0102030405060708';
const FROM = { ip: '192.0.2.11', port: 8091 };

describe('KeyNotices', () => {
  it('answers with 13 bytes: 0x04, the datagram’s key id and its nonce', () => {
    const n = new KeyNotices({ clock: new ManualClock(0) });
    expect(hex(n.answer(DATAGRAM, FROM))).toBe(NOTICE);
    expect(n.counters.keyNoticesSent).toBe(1);
    // Nothing shorter than a keyed header is answered; with `send: false`, nothing at all.
    expect(n.answer(DATAGRAM.subarray(0, 18), FROM)).toBeUndefined();
    const silent = new KeyNotices({ clock: new ManualClock(0) }, { send: false });
    expect(silent.answer(DATAGRAM, FROM)).toBeUndefined();
    expect(silent.counters).toMatchObject({ keyNoticesSent: 0, keyNoticesLimited: 0 });
  });

  it('counts a notice only when it echoes an expected request, from its address, under its key id', () => {
    const clock = new ManualClock(1_000);
    const reports: KeyRejection[] = [];
    const n = new KeyNotices(
      { clock, heard: () => true, onReport: (r) => reports.push(r) },
      { reportIntervalMs: 10_000 },
    );
    const handle = n.expect(DATAGRAM, FROM);
    expect(n.expecting).toBe(1);
    n.receive(bytes(NOTICE), { ip: FROM.ip, port: 8092 }); // another port
    n.receive(bytes('04' + '1a2b3c4e' + '0102030405060708'), FROM); // another key id
    n.receive(bytes('04' + '1a2b3c4d' + '0102030405060709'), FROM); // another nonce
    n.receive(bytes(NOTICE + '00'), FROM); // 14 bytes
    expect(n.counters).toMatchObject({ keyNoticesIgnored: 4, keyRejected: 0 });
    expect(reports).toEqual([]);
    n.receive(bytes(NOTICE), FROM);
    expect(n.counters).toMatchObject({ keyNoticesIgnored: 4, keyRejected: 1 });
    expect(reports).toEqual([
      { keyId: '1a2b3c4d', from: FROM, notices: 1, fleetHeard: true, at: 1_000 },
    ]);
    expect(n.last).toEqual({ keyId: '1a2b3c4d', from: FROM, at: 1_000 });
    // Matched once: a copy, or a notice after the request settled, is ignored.
    n.receive(bytes(NOTICE), FROM);
    n.forget(handle);
    expect(n.expecting).toBe(0);
    expect(n.counters.keyNoticesIgnored).toBe(5);
  });

  it('reports at most once per interval, with the notices counted in between', async () => {
    const clock = new ManualClock(0);
    const reports: KeyRejection[] = [];
    const n = new KeyNotices(
      { clock, onReport: (r) => reports.push(r) },
      { reportIntervalMs: 60_000 },
    );
    const auth = new DatagramAuth({ clock, keyring: Keyring.parse(['ab'.repeat(32)]) });
    const refused = () => {
      const d = auth.seal(new Uint8Array(4), 64);
      n.expect(d, FROM);
      n.receive(n.answer(d, FROM)!, FROM);
    };
    refused();
    await clock.advance(30_000);
    refused();
    refused();
    expect(reports.map((r) => r.notices)).toEqual([1]);
    await clock.advance(30_000);
    refused();
    expect(reports.map((r) => [r.notices, r.at, r.fleetHeard])).toEqual([
      [1, 0, false],
      [3, 60_000, false],
    ]);
    expect(n.counters.keyRejected).toBe(4);
  });
});
