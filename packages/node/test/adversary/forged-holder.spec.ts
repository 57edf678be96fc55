/**
 * Issue 10, attack 1 at the node level: an attacker (its own UDP socket on its own 127.x address)
 * stores "complete" holder records for a victim URL that point at an internal HTTP service serving
 * forged bytes (with the forged bytes' size and sha256), naming itself and naming a real member as
 * the holder. Two running nodes (real DSHT over UDP, real proxies) then serve the URL: no node ever
 * connects to the forged address, and the bytes served are the origin's.
 *
 * Keyed mode: the attacker has no key; its datagrams (open frames, or keyed under its own key) are
 * dropped before parsing and counted, and nothing is stored. Open mode: the records are stored (the
 * attacker completed round trips), yet a holder is reached only as a verified member at the address
 * it was verified at, so the forged address is never used.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { urlKey } from '@coral/httpprx';
import { Keyring } from '@coral/keyring';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeHolder } from '../../src/adapters/holder-codec.js';
import type { CoralNode } from '../../src/compose/node.js';
import { SampleOrigin, fetchVia } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';
import { Attacker, startPair, type Mode } from './attacker.js';

const FORGED = Buffer.from('<h1>forged page: not the origin</h1>');

describe.each(['keyed', 'open'] as Mode[])('a forged holder record (%s mode)', (mode) => {
  const subnet = randomSubnet();
  const ip = (h: number) => `127.0.${subnet}.${h}`;
  const dir = tmpDir(`forged-${mode}`);
  const origin = new SampleOrigin({ host: '127.0.0.1', objects: 2, objectBytes: 2048 });
  let internal: Server;
  let internalPort = 0;
  let internalConnections = 0;
  const nodes: CoralNode[] = [];
  const attackers: Attacker[] = [];

  beforeAll(async () => {
    await origin.listen();
    // The "internal service" the forged records point at.
    internal = createServer((_req, res) => res.end(FORGED));
    internal.on('connection', () => internalConnections++);
    await new Promise<void>((r) => internal.listen(0, ip(66), r));
    internalPort = (internal.address() as AddressInfo).port;
    nodes.push(...(await startPair([ip(21), ip(22)], dir, mode)));
    // Keyed: an outsider without the key (open frames) and one with a key of its own.
    const keys = mode === 'keyed' ? [undefined, [Keyring.generateKey()]] : [undefined];
    for (const k of keys) attackers.push(await new Attacker(ip(77 + attackers.length), k).bind());
  }, 30_000);

  afterAll(async () => {
    for (const a of attackers) a.close();
    for (const n of nodes.reverse()) await n.stop();
    internal?.close();
    await origin.close();
  });

  it('never makes a node connect to the forged address nor serve forged bytes', async () => {
    const url = `http://www.origin.test:${origin.address.port}/obj/1`;
    const key = urlKey(url);
    const [a, b] = nodes as [CoralNode, CoralNode];
    const sha256 = createHash('sha256').update(FORGED).digest('hex');
    const stores: Promise<number | undefined>[] = [];
    for (const attacker of attackers) {
      // It claims the internal service's port as its own HTTP port, too.
      attacker.profile = { httpPort: internalPort };
      const holders = [attacker.idHex, a.view.info().nodeId].map((nodeId) =>
        encodeHolder({
          nodeId,
          ip: ip(66),
          httpPort: internalPort,
          state: 'complete',
          at: Date.now() + 60_000,
          size: FORGED.length,
          sha256,
        }),
      );
      for (const node of nodes) {
        const to = { ip: node.dsht.contact.ip, port: node.dsht.contact.port };
        if (mode === 'open') expect(await attacker.roundTrip(to)).toBe(true);
        for (const value of holders) {
          for (let level = 0; level < node.view.levels; level++)
            stores.push(attacker.store(to, key, value, level, 600));
        }
      }
    }
    const sent = stores.length;
    const stored = (await Promise.all(stores)).filter((status) => status === 0).length;
    const forgedHere = (n: CoralNode) =>
      n.view.localGet(key).some((v) => Buffer.from(v.value).includes(Buffer.from(ip(66))));
    if (mode === 'keyed') {
      // Nothing answered, nothing stored; every datagram dropped before parsing and counted.
      expect(stored).toBe(0);
      await waitFor(
        () =>
          nodes.reduce((s, n) => {
            const c = n.dsht.authState().counters;
            return s + c.unauthenticated + c.unknownKey;
          }, 0) >= sent,
        10_000,
        'every forged datagram to be dropped and counted',
      );
      expect(nodes.some(forgedHere)).toBe(false);
    } else {
      // Open mode stores them (a round trip is all it asks): the proxy must still not obey them.
      expect(stored).toBeGreaterThan(0);
      expect(nodes.some(forgedHere)).toBe(true);
    }

    const name = `www.origin.test.${origin.address.port}.nyud.net`;
    for (const via of [b, a, b]) {
      const r = await fetchVia({ ip: via.addresses.advertiseIp, port: 8090 }, name, '/obj/1');
      expect(r.status).toBe(200);
      expect(r.body.equals(origin.body(1)), `served by ${via.addresses.advertiseIp}`).toBe(true);
      expect(r.body.includes(FORGED)).toBe(false);
    }
    expect(internalConnections).toBe(0);
  });
});
