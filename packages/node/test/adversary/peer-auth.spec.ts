/**
 * Issue 10 at the node level: node-to-node HTTP. A stranger (its own socket on its own 127.x
 * address) sends peer-fetch requests (the `x-coral-peer` marker) to a keyed node's proxy with no
 * Coral-Peer-Auth, a malformed one, one under a key the fleet does not hold, and a well-formed one
 * for another request target (a replayed header): each gets 403 and is counted by reason in
 * /metrics, and none reaches the origin. A request signed with the fleet key is served. In open
 * mode there is nothing to check (docs/security.md): the same marker is served.
 */
import { HttpPeerSigner, Keyring } from '@coral/keyring';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { SampleOrigin, fetchVia } from '../../src/fleet/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';
import { FLEET_KEY, metric, nodeEnv, type Mode } from './attacker.js';

describe.each(['keyed', 'open'] as Mode[])('peer requests to a %s node', (mode) => {
  const subnet = randomSubnet();
  const ip = `127.0.${subnet}.41`;
  const stranger = `127.0.${subnet}.99`;
  const origin = new SampleOrigin({ host: '127.0.0.1', objects: 4, objectBytes: 1024 });
  let node: CoralNode;
  let name = '';

  beforeAll(async () => {
    await origin.listen();
    name = `www.origin.test.${origin.address.port}.nyud.net`;
    node = await CoralNode.start(loadConfig({ env: nodeEnv(ip, tmpDir(`peer-${mode}`), mode) }), {
      services: realServices,
      logger: createLogger({ level: 'silent' }),
    });
    // The node holds /obj/1 (a client fetched it), so a peer request would be served from cache.
    expect((await fetchVia({ ip, port: 8090 }, name, '/obj/1')).status).toBe(200);
    // Held means committed to the store (the client's response can end before the commit).
    await waitFor(
      async () =>
        (await node.view.cacheList()).some((o) => (o as { url: string }).url.endsWith('/obj/1')),
      10_000,
      '/obj/1 in the cache',
    );
  });
  afterAll(async () => {
    await node?.stop();
    await origin.close();
  });

  const peerGet = (path: string, auth?: string) =>
    fetchVia({ ip, port: 8090 }, name, path, {
      localAddress: stranger,
      headers: { 'x-coral-peer': '0'.repeat(40), ...(auth ? { 'coral-peer-auth': auth } : {}) },
    });
  const rejected = async (reason: string) =>
    metric(
      (
        await node.admin.handle({
          method: 'GET',
          url: '/metrics',
          headers: {},
          remoteAddress: '127.0.0.1',
        })
      ).body,
      'coral_peer_requests_rejected_total',
      `reason="${reason}"`,
    );

  if (mode === 'keyed') {
    it('refuses unauthenticated peer requests with 403, counts them, and never fetches for them', async () => {
      const outsider = new HttpPeerSigner({ keyring: Keyring.parse([Keyring.generateKey()]) });
      const fleet = new HttpPeerSigner({ keyring: Keyring.parse([FLEET_KEY]) });
      const other = fleet.sign({ method: 'GET', authority: name, path: '/obj/1' });
      const cases: [reason: string, auth: string | undefined, path: string][] = [
        ['missing', undefined, '/obj/2'],
        ['malformed', 'v1;kid=zz;mac=nope', '/obj/2'],
        [
          'unknown-key',
          outsider.sign({ method: 'GET', authority: name, path: '/obj/2' }),
          '/obj/2',
        ],
        // A header captured from a request for another object does not verify for this one.
        ['bad-mac', other, '/obj/3'],
      ];
      for (const [reason, auth, path] of cases) {
        const before = await rejected(reason);
        const r = await peerGet(path, auth);
        expect(r.status, reason).toBe(403);
        expect(r.body.toString(), reason).toMatch(/CORAL_PEER_UNAUTHORIZED/);
        expect(await rejected(reason), reason).toBe(before + 1);
      }
      expect(origin.counts.get('/obj/2')).toBeUndefined();
      expect(origin.counts.get('/obj/3')).toBeUndefined();
      // Signed with the fleet key, it is served (from the cache: a peer never goes to the origin).
      const signed = fleet.sign({ method: 'GET', authority: name, path: '/obj/1' });
      const ok = await peerGet('/obj/1', signed);
      expect(ok.status).toBe(200);
      expect(ok.body.equals(origin.body(1))).toBe(true);
      // The same header again is a replay.
      const again = await peerGet('/obj/1', signed);
      expect(again.status).toBe(403);
      expect(await rejected('replayed')).toBe(1);
      expect(origin.counts.get('/obj/1')).toBe(1);
    });
  } else {
    it('serves peer requests without authentication (open mode checks nothing)', async () => {
      const r = await peerGet('/obj/1');
      expect(r.status).toBe(200);
      expect(await rejected('missing')).toBe(0);
    });
  }
});
