import { describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom } from '@coral/testkit';
import {
  type Contact,
  encode,
  type Message,
  nodeIdFor,
  type RequestHandler,
  Rpc,
  type RpcObserver,
} from '@coral/dsht/internal';
import { SimNetwork } from '../../../src/index.js';

function setup(latency = 25) {
  const clock = new ManualClock();
  const net = new SimNetwork({ clock, random: new SeededRandom(1) }, { latencyMs: () => latency });
  const make = async (
    ip: string,
    parts: { handler?: RequestHandler; observer?: RpcObserver } = {},
  ) => {
    const transport = net.createTransport(ip, 4000);
    await transport.start();
    const self: Contact = { id: nodeIdFor(ip, 4000), ip, port: 4000 };
    const rpc = new Rpc(
      { transport, clock, random: new SeededRandom(ip.length), ...parts },
      { self: () => self, timeoutMs: 1000 },
    );
    return { transport, rpc, self };
  };
  return { clock, net, make };
}

describe('Rpc', () => {
  it('answers a request and samples the RTT', async () => {
    const { clock, make } = setup(25);
    const seen: string[] = [];
    const rtts: number[] = [];
    const a = await make('10.0.0.1', { observer: { rtt: (_c, ms) => rtts.push(ms) } });
    const b = await make('10.0.0.2', {
      handler: { handle: () => ({ type: 'PONG' }) },
      observer: { seen: (c) => seen.push(c.ip) },
    });
    const p = a.rpc.request(b.self, { type: 'PING' });
    await clock.advance(100);
    const r = await p;
    expect(r.body).toEqual({ type: 'PONG' });
    expect(r.sender.id).toEqual(b.self.id);
    expect(r.rttMs).toBe(50);
    expect(rtts).toEqual([50]);
    expect(seen).toEqual(['10.0.0.1']);
    expect(a.rpc.rtt.get('10.0.0.2:4000')?.srtt).toBe(50);
  });

  it('retransmits with exponential backoff, then times out', async () => {
    const { clock, make, net } = setup(10);
    const a = await make('10.0.0.1');
    const silent = net.createTransport('10.0.0.9', 4000);
    const arrivals: number[] = [];
    silent.onDatagram(() => arrivals.push(clock.now()));
    await silent.start();
    const p = a.rpc.request({ ip: '10.0.0.9', port: 4000 }, { type: 'PING' }, { retries: 2 });
    const outcome = p.catch((e: unknown) => e);
    await clock.advance(10_000);
    // Attempts at 0, 1000, 1000+2000; each arrives 10 ms later; failure at 3000+4000.
    expect(arrivals).toEqual([10, 1010, 3010]);
    expect(await outcome).toMatchObject({ code: 'DSHT_ERR_TIMEOUT' });
    expect(a.rpc.counters.retransmits).toBe(2);
    expect(a.rpc.counters.timeouts).toBe(1);
    expect(a.rpc.pendingCount).toBe(0);
  });

  it('aborts through the signal', async () => {
    const { clock, make } = setup(100);
    const a = await make('10.0.0.1');
    const b = await make('10.0.0.2');
    const ac = new AbortController();
    const p = a.rpc
      .request(b.self, { type: 'PING' }, { signal: ac.signal })
      .catch((e: unknown) => e);
    await clock.advance(10);
    ac.abort();
    expect(await p).toMatchObject({ code: 'DSHT_ERR_ABORTED' });
    expect(a.rpc.pendingCount).toBe(0);
  });

  it('counts and drops malformed and spoofed datagrams without answering', async () => {
    const { clock, make, net } = setup(5);
    let handled = 0;
    const b = await make('10.0.0.2', {
      handler: {
        handle: () => {
          handled++;
          return { type: 'PONG' };
        },
      },
    });
    const evil = net.createTransport('10.0.0.66', 4000);
    let answers = 0;
    evil.onDatagram(() => answers++);
    await evil.start();
    evil.send(new Uint8Array([1, 2, 3, 4]), b.self);
    evil.send(new Uint8Array(0), b.self);
    // A claimed id that is not sha1(ip:port).
    const forged: Contact = { id: nodeIdFor('10.0.0.7', 4000), ip: '10.0.0.66', port: 4000 };
    evil.send(encode({ kind: 'request', txid: 1, sender: forged, body: { type: 'PING' } }), b.self);
    // A correct id for an address that is not the source.
    const other: Contact = { id: nodeIdFor('10.0.0.7', 4000), ip: '10.0.0.7', port: 4000 };
    evil.send(encode({ kind: 'request', txid: 2, sender: other, body: { type: 'PING' } }), b.self);
    // An answer nobody asked for.
    const me: Contact = { id: nodeIdFor('10.0.0.66', 4000), ip: '10.0.0.66', port: 4000 };
    evil.send(encode({ kind: 'response', txid: 3, sender: me, body: { type: 'PONG' } }), b.self);
    await clock.advance(100);
    expect(b.rpc.counters.malformed).toBe(2);
    expect(b.rpc.counters.spoofed).toBe(2);
    expect(b.rpc.counters.unexpected).toBe(1);
    expect(handled).toBe(0);
    expect(answers).toBe(0);
    // A valid request still works afterwards; its answer is never larger than the request, so an
    // unpadded first PING (the PONG would carry a token) is served but not answered...
    const ping: Message = { kind: 'request', txid: 4, sender: me, body: { type: 'PING' } };
    evil.send(encode(ping), b.self);
    await clock.advance(100);
    expect(handled).toBe(1);
    expect(answers).toBe(0);
    expect(b.rpc.counters.amplificationDropped).toBe(1);
    // ...while a padded one is.
    evil.send(encode(ping, 1200, 200), b.self);
    await clock.advance(100);
    expect(handled).toBe(2);
    expect(answers).toBe(1);
    expect(b.rpc.counters.amplificationMax).toBeLessThanOrEqual(1);
  });

  it('turns a throwing handler into an ERROR answer (RemoteError at the caller)', async () => {
    const { clock, make } = setup(5);
    const a = await make('10.0.0.1');
    const b = await make('10.0.0.2', {
      handler: {
        handle: () => {
          throw new Error('boom');
        },
      },
    });
    const p = a.rpc.request(b.self, { type: 'PING' }).catch((e: unknown) => e);
    await clock.advance(100);
    expect(await p).toMatchObject({ code: 'DSHT_ERR_REMOTE', remoteCode: 3 });
  });
});
