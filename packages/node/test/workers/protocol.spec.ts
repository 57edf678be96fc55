import { describe, expect, it } from 'vitest';
import {
  decodeDecisions,
  decodeHintResult,
  decodeProbes,
  decodeNumberTree,
  decodeToOwner,
  decodeToWorker,
  decodeWorkerData,
  sumTrees,
} from '../../src/workers/protocol.js';

const ID = 'ab'.repeat(20);
const self = { id: ID, ipv4: '127.0.0.1', httpPort: 8090, dnsPort: 5353 };
const snapshot = {
  self,
  selfLive: true,
  levelThresholdsMs: [60, 20],
  members: [{ id: 'cd'.repeat(20), ipv6: '::1', httpPort: 8090, region: 'eu' }],
  clusters: [[], [ID], [ID]],
};

/** The message of the protocol error `fn` throws. */
function refused(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect((err as { code?: string }).code).toBe('CORAL_ERR_WORKER_PROTOCOL');
    return (err as Error).message;
  }
  throw new Error('expected CORAL_ERR_WORKER_PROTOCOL');
}

describe('worker protocol', () => {
  it('decodes every message of both directions after a structured clone', () => {
    const toWorker = [
      { type: 'directory', seq: 3, snapshot },
      { type: 'challenges', entries: [{ zone: 'nyud.net', value: 'x'.repeat(43), expiresAt: 1 }] },
      { type: 'command', id: 1, command: 'reload' },
      { type: 'command', id: 2, command: 'stats' },
      { type: 'command', id: 2, command: 'decisions' },
      { type: 'command', id: 2, command: 'probes' },
      { type: 'command', id: 3, command: 'drain', graceMs: 5000 },
      { type: 'reply', id: 4, ok: true, value: { nodes: [], prefix: null } },
      { type: 'reply', id: 5, ok: false, code: 'CORAL_ERR_WORKER_UNAVAILABLE', message: 'gone' },
    ];
    for (const m of toWorker) expect(decodeToWorker(structuredClone(m))).toEqual(m);
    const toOwner = [
      { type: 'ready', dns: { host: '127.0.0.1', port: 5353 } },
      { type: 'ready', dns: null },
      { type: 'request', id: 1, op: 'hinted', target: { ip: '203.0.113.9' }, count: 2 },
      {
        type: 'request',
        id: 2,
        op: 'hinted',
        target: { ip: '::1', subnet: '2001:db8::/56' },
        count: 2,
      },
      {
        type: 'report',
        answers: [['random', 'NOERROR', 3]],
        rateLimited: 0,
        stats: { queries: { udp: 3, tcp: 0 }, malformed: 0 },
      },
      { type: 'done', id: 7, ok: true, value: { anything: [1] } },
      { type: 'done', id: 8, ok: false, code: 'DNS_ERR_STATE', message: 'closed' },
    ];
    for (const m of toOwner) expect(decodeToOwner(structuredClone(m))).toEqual(m);
    const data = {
      index: 1,
      config: { workers: 2 },
      snapshot,
      challenges: [],
      dns: { host: '::1', port: 0 },
    };
    expect(decodeWorkerData(structuredClone(data))).toEqual(data);
    expect(decodeHintResult({ nodes: [self], prefix: 24 })).toEqual({ nodes: [self], prefix: 24 });
  });

  it('refuses malformed messages with CORAL_ERR_WORKER_PROTOCOL, naming where', () => {
    expect(refused(() => decodeToWorker(null))).toMatch(/^malformed message to a worker/);
    expect(refused(() => decodeToWorker('directory'))).toMatch(/malformed message to a worker/);
    expect(refused(() => decodeToWorker({ type: 'nope' }))).toMatch(/at type/);
    expect(
      refused(() => decodeToWorker({ type: 'command', id: 1, command: 'format-disk' })),
    ).toMatch(/malformed/);
    // A drain without its grace, an id that is not a counter, an unknown extra field.
    expect(refused(() => decodeToWorker({ type: 'command', id: 1, command: 'drain' }))).toMatch(
      /malformed/,
    );
    expect(refused(() => decodeToWorker({ type: 'command', id: -1, command: 'stats' }))).toMatch(
      /at id/,
    );
    expect(
      refused(() => decodeToWorker({ type: 'command', id: 1, command: 'stats', x: 1 })),
    ).toMatch(/malformed/);
    // Snapshots: a bad node id, an address that is not one, a port out of range.
    const bad = (patch: object) => ({
      type: 'directory',
      seq: 1,
      snapshot: { ...snapshot, ...patch },
    });
    expect(refused(() => decodeToWorker(bad({ self: { ...self, id: 'xyz' } })))).toMatch(
      /at snapshot\.self\.id/,
    );
    expect(refused(() => decodeToWorker(bad({ self: { ...self, ipv4: '::1' } })))).toMatch(
      /at snapshot\.self\.ipv4/,
    );
    expect(refused(() => decodeToWorker(bad({ members: [{ ...self, httpPort: 70000 }] })))).toMatch(
      /at snapshot\.members\.0\.httpPort/,
    );
    expect(refused(() => decodeToWorker(bad({ levelThresholdsMs: [-1] })))).toMatch(
      /levelThresholdsMs/,
    );
    // Error codes are codes, not free text.
    expect(
      refused(() =>
        decodeToWorker({ type: 'reply', id: 1, ok: false, code: 'no spaces', message: '' }),
      ),
    ).toMatch(/at code/);
    expect(refused(() => decodeToOwner({ type: 'ready' }))).toMatch(/at dns/);
    expect(
      refused(() =>
        decodeToOwner({ type: 'request', id: 1, op: 'hinted', target: { ip: 'evil' }, count: 1 }),
      ),
    ).toMatch(/at target\.ip/);
    expect(
      refused(() =>
        decodeToOwner({ type: 'request', id: 1, op: 'rm', target: { ip: '::1' }, count: 1 }),
      ),
    ).toMatch(/malformed/);
    expect(
      refused(() => decodeToOwner({ type: 'report', answers: [['a', 'b', -1]], rateLimited: 0 })),
    ).toMatch(/at answers\.0\.2/);
    expect(
      refused(() =>
        decodeToOwner({ type: 'report', answers: [], rateLimited: 0, stats: { a: 'x' } }),
      ),
    ).toMatch(/at stats\.a/);
    expect(refused(() => decodeWorkerData(undefined))).toMatch(/^malformed workerData/);
    expect(refused(() => decodeDecisions([{ at: 1, transport: 'quic' }]))).toMatch(
      /at 0\.transport/,
    );
    expect(refused(() => decodeProbes([{ prefix: '1.2.3.0/24', target: '1.2.3.4' }]))).toMatch(
      /at 0\.inFlight/,
    );
    expect(refused(() => decodeHintResult({ nodes: [], prefix: 8 }))).toMatch(/at prefix/);
    expect(refused(() => decodeNumberTree({ a: { b: null } }))).toMatch(/at a: /);
  });

  it('sums counter trees key by key', () => {
    expect(
      sumTrees(
        { queries: { udp: 1, tcp: 2 }, rcodes: { NOERROR: 1 } },
        { queries: { udp: 3, tcp: 0 }, rcodes: { REFUSED: 2 }, x: 1 },
      ),
    ).toEqual({ queries: { udp: 4, tcp: 2 }, rcodes: { NOERROR: 1, REFUSED: 2 }, x: 1 });
  });
});
