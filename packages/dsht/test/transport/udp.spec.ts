import { describe, expect, it } from 'vitest';
import { UdpTransport } from '../../src/transport/udp.js';
import type { Transport } from '../../src/transport/transport.js';
import { transportContract } from './contract.js';

// Real sockets on loopback only. settle() waits on arrival (event-driven, bounded), not on a sleep.
transportContract('UDP', () => {
  const made: Transport[] = [];
  return {
    make: () => {
      const t = new UdpTransport({}, { host: '127.0.0.1', port: 0 });
      made.push(t);
      return t;
    },
    settle: async (done) => {
      const deadline = Date.now() + 5000;
      while (!done() && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    },
    cleanup: async () => {
      for (const t of made) await t.close();
    },
  };
});

describe('UdpTransport', () => {
  it('reports a bind failure as DSHT_ERR_TRANSPORT', async () => {
    const a = new UdpTransport({}, { host: '127.0.0.1', port: 0 });
    await a.start();
    const b = new UdpTransport({}, { host: '127.0.0.1', port: a.address.port });
    await expect(b.start()).rejects.toMatchObject({ code: 'DSHT_ERR_TRANSPORT' });
    await a.close();
  });
});
