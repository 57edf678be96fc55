/**
 * The pure accounting, on a manual clock with fake sockets: caps, shedding order, and the idle,
 * keep-alive, header and body timeouts. (The same mechanisms over real sockets:
 * http-server.spec.ts.)
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import {
  ConnectionBudget,
  CONNGUARD_ERR_DUPLICATE_LISTENER,
  CONNGUARD_ERR_OPTIONS,
  type CloseReason,
  type GuardedConnection,
  type ListenerBudget,
} from '../src/index.js';

class FakeSocket {
  bytes = 0;
  closed: CloseReason | undefined;
  conn: GuardedConnection | undefined;
}

function setup(ceiling = 0) {
  const clock = new ManualClock();
  const events: string[] = [];
  const budget = new ConnectionBudget(
    {
      clock,
      events: {
        refused: (l, r) => events.push(`${l} refused ${r}`),
        closed: (l, r) => events.push(`${l} closed ${r}`),
      },
    },
    { ceiling },
  );
  const open = (listener: ListenerBudget, from: string): FakeSocket => {
    const s = new FakeSocket();
    s.conn = listener.admit(from, {
      close: (reason) => (s.closed = reason),
      bytesRead: () => s.bytes,
    });
    return s;
  };
  return { clock, budget, events, open };
}

describe('ConnectionBudget: caps', () => {
  it('refuses past the per-address and per-/24 caps, and counts each refusal by reason', () => {
    const { budget, events, open } = setup();
    const http = budget.listener('http', { perAddress: 2, perPrefix: 3 });
    expect(open(http, '10.0.0.1').conn).toBeDefined();
    expect(open(http, '10.0.0.1').conn).toBeDefined();
    expect(open(http, '10.0.0.1').conn).toBeUndefined(); // third from one address
    expect(open(http, '::ffff:10.0.0.1').conn).toBeUndefined(); // the same client, mapped
    expect(open(http, '10.0.0.2').conn).toBeDefined();
    expect(open(http, '10.0.0.3').conn).toBeUndefined(); // fourth from 10.0.0.0/24
    expect(open(http, '10.0.1.3').conn).toBeDefined(); // another /24
    expect(http.counters.refused).toMatchObject({ 'per-address': 2, 'per-prefix': 1 });
    expect(events.filter((e) => e.includes('refused'))).toEqual([
      'http refused per-address',
      'http refused per-address',
      'http refused per-prefix',
    ]);
    expect(http.open).toBe(4);
  });

  it('a closed connection gives its slots back', () => {
    const { budget, open } = setup();
    const http = budget.listener('http', { perAddress: 1 });
    const a = open(http, '10.0.0.1');
    a.conn!.release();
    a.conn!.release(); // idempotent
    expect(open(http, '10.0.0.1').conn).toBeDefined();
    expect(http.open).toBe(1);
    expect(budget.open).toBe(1);
  });

  it('listener names are unique and limits are checked', () => {
    const { budget } = setup();
    budget.listener('http');
    expect(() => budget.listener('http')).toThrow(
      expect.objectContaining({ code: CONNGUARD_ERR_DUPLICATE_LISTENER }),
    );
    expect(() => budget.listener('x', { perAddress: -1 })).toThrow(
      expect.objectContaining({ code: CONNGUARD_ERR_OPTIONS }),
    );
    expect(() => budget.listener('y', { prefixBits: { ipv4: 33, ipv6: 56 } })).toThrow(
      expect.objectContaining({ code: CONNGUARD_ERR_OPTIONS }),
    );
    expect(() => new ConnectionBudget({}, { ceiling: 1.5 })).toThrow(
      expect.objectContaining({ code: CONNGUARD_ERR_OPTIONS }),
    );
  });
});

describe('ConnectionBudget: the ceiling and shedding', () => {
  it('at the ceiling, the connection waiting longest on any listener is shed first', async () => {
    const { budget, clock, open } = setup(3);
    const http = budget.listener('http', { perAddress: 0, perPrefix: 0 });
    const dns = budget.listener('dns', { perAddress: 0, perPrefix: 0 });
    const a = open(http, '10.0.0.1');
    await clock.advance(1);
    const b = open(dns, '10.0.0.2');
    await clock.advance(1);
    const c = open(http, '10.0.0.3');
    a.conn!.begin(); // a request in progress: not sheddable
    const d = open(http, '10.0.0.4');
    expect(d.conn).toBeDefined();
    expect([a.closed, b.closed, c.closed]).toEqual([undefined, 'shed', undefined]);
    expect(dns.counters.closed.shed).toBe(1);
    expect(budget.open).toBe(3);
    // c waits longest now; after it, only busy connections: a newcomer is refused.
    c.conn!.begin();
    d.conn!.begin();
    expect(open(http, '10.0.0.5').conn).toBeUndefined();
    expect(http.counters.refused.ceiling).toBe(1);
    // A response ends: that connection waits again, and is the one to go.
    c.conn!.end();
    expect(open(dns, '10.0.0.6').conn).toBeDefined();
    expect(c.closed).toBe('shed');
  });

  it('a listener outside the ceiling (admin) is neither shed for it nor refused by it', () => {
    const { budget, open } = setup(1);
    const http = budget.listener('http');
    const admin = budget.listener('admin', { countsTowardCeiling: false, maxConnections: 2 });
    const h = open(http, '10.0.0.1');
    h.conn!.begin();
    const x = open(admin, '127.0.0.1');
    const y = open(admin, '127.0.0.1');
    expect(x.conn && y.conn).toBeDefined();
    expect(budget.open).toBe(1);
    // Its own cap sheds its own longest-waiting connection.
    const z = open(admin, '127.0.0.1');
    expect(z.conn).toBeDefined();
    expect(x.closed).toBe('shed');
    expect(h.closed).toBeUndefined();
    y.conn!.begin();
    z.conn!.begin();
    expect(open(admin, '127.0.0.1').conn).toBeUndefined();
    expect(admin.counters.refused['listener-full']).toBe(1);
  });
});

describe('ConnectionBudget: timeouts', () => {
  const limits = {
    idleTimeoutMs: 10_000,
    keepAliveTimeoutMs: 5_000,
    headerTimeoutMs: 20_000,
    bodyTimeoutMs: 30_000,
  };

  it('a connection that sends nothing is closed at the idle timeout', async () => {
    const { budget, clock, open } = setup();
    const http = budget.listener('http', limits);
    const s = open(http, '10.0.0.1');
    await clock.advance(9_999);
    expect(s.closed).toBeUndefined();
    await clock.advance(1);
    expect(s.closed).toBe('idle-timeout');
    expect(http.open).toBe(0);
  });

  it('slowloris: a head trickled byte by byte is closed at the header deadline all the same', async () => {
    const { budget, clock, open } = setup();
    const http = budget.listener('http', limits);
    const s = open(http, '10.0.0.1');
    for (let t = 0; t < 19; t++) {
      s.bytes += 10; // a header line every second
      await clock.advance(1_000);
      expect(s.closed).toBeUndefined();
    }
    s.bytes += 10;
    await clock.advance(1_000);
    expect(s.closed).toBe('header-timeout');
    expect(http.counters.closed['header-timeout']).toBe(1);
  });

  it('a complete head stops the clock; after the response, the keep-alive timeout runs', async () => {
    const { budget, clock, open } = setup();
    const http = budget.listener('http', limits);
    const s = open(http, '10.0.0.1');
    s.bytes = 100;
    await clock.advance(15_000);
    s.conn!.begin();
    await clock.advance(60_000); // a long response: no timer runs
    expect(s.closed).toBeUndefined();
    s.conn!.end();
    await clock.advance(4_999);
    expect(s.closed).toBeUndefined();
    await clock.advance(1);
    expect(s.closed).toBe('keepalive-timeout');
  });

  it('a second request begun in the keep-alive time has the header timeout from the response', async () => {
    const { budget, clock, open } = setup();
    const http = budget.listener('http', limits);
    const s = open(http, '10.0.0.1');
    s.bytes = 100;
    s.conn!.begin();
    s.conn!.end();
    await clock.advance(1_000);
    s.bytes += 5;
    await clock.advance(18_999);
    expect(s.closed).toBeUndefined();
    await clock.advance(1);
    expect(s.closed).toBe('header-timeout');
  });

  it('a TLS handshake alone is not a request begun (track rebases the count)', async () => {
    const { budget, clock, open } = setup();
    const https = budget.listener('https', limits);
    const s = open(https, '10.0.0.1');
    s.bytes = 1_700; // handshake
    const decrypted = 0;
    s.conn!.track(() => decrypted);
    await clock.advance(10_000);
    expect(s.closed).toBe('idle-timeout');
  });

  it('body: a stalled upload is closed; a gap the server caused by not reading is not', async () => {
    const { budget, clock, open } = setup();
    const http = budget.listener('http', limits);
    const s = open(http, '10.0.0.1');
    s.bytes = 100;
    s.conn!.begin();
    let reading = true;
    s.conn!.body(() => reading);
    s.bytes += 1_000;
    await clock.advance(30_000);
    expect(s.closed).toBeUndefined(); // bytes came: re-armed
    reading = false;
    await clock.advance(60_000);
    expect(s.closed).toBeUndefined(); // the server was not reading
    reading = true;
    await clock.advance(30_000);
    expect(s.closed).toBe('body-timeout');
  });

  it('bodyDone and end stop the body timer', async () => {
    const { budget, clock, open } = setup();
    const http = budget.listener('http', limits);
    const s = open(http, '10.0.0.1');
    s.conn!.begin();
    s.conn!.body(() => true);
    s.conn!.bodyDone();
    await clock.advance(40_000);
    expect(s.closed).toBeUndefined();
  });

  it('0 turns a timeout off', async () => {
    const { budget, clock, open } = setup();
    const http = budget.listener('http', { idleTimeoutMs: 0, headerTimeoutMs: 0 });
    const s = open(http, '10.0.0.1');
    await clock.advance(3_600_000);
    expect(s.closed).toBeUndefined();
    expect(clock.pending).toBe(0);
  });
});
