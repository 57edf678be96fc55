/**
 * FleetChallenges on its own: a member that cannot be reached makes a change incomplete (and the
 * CLI exit 1, so an ACME hook fails at once), and values expire on the injected clock.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { InMemoryChallengeStore } from '@coral/dnssrv';
import { HttpPeerSigner, Keyring } from '@coral/keyring';
import { ManualClock } from '@coral/testkit';
import { FleetChallenges } from '../../src/acme/fleet-challenges.js';
import type { AdminBackend } from '../../src/admin/backend.js';
import { AdminApi } from '../../src/admin/server.js';
import { PeerAnswerAuth } from '../../src/peer/answers.js';
import { fixedAdminPort } from '../../src/peer/requests.js';
import { randomSubnet, runCli } from '../helpers.js';

const keyed = () => {
  const keyring = Keyring.parse([Keyring.generateKey()]);
  return { peerAuth: new HttpPeerSigner({ keyring }), answerAuth: new PeerAnswerAuth(keyring) };
};

describe('FleetChallenges', () => {
  it('reports a member that did not apply a change, and the CLI exits 1 for it', async () => {
    const clock = new ManualClock(Date.now());
    const store = new InMemoryChallengeStore({ clock });
    const down = `127.0.${randomSubnet()}.250`; // nothing listens there
    const acme = new FleetChallenges(
      {
        store,
        ...keyed(),
        members: () => [{ nodeId: 'ab'.repeat(20), ip: down }],
        adminPorts: fixedAdminPort(8092),
      },
      { zone: 'nyud.net' },
    );
    const r = await acme.set('v1', 60);
    expect(r.propagation).toMatchObject({
      mode: 'sent',
      complete: false,
      members: [{ address: `${down}:8092`, ok: false, error: 'ECONNREFUSED' }],
    });
    // Applied here all the same, and gone when its lifetime is over.
    expect(store.txt('nyud.net')).toEqual(['v1']);
    await clock.advance(60_000);
    expect(store.txt('nyud.net')).toEqual([]);
    expect(acme.list()).toEqual([]);

    // The admin API answers such a change with 502 CORAL_ERR_FLEET_INCOMPLETE and the whole answer.
    const api = new AdminApi({ backend: {} as AdminBackend, acme });
    const res = await api.handle({
      method: 'POST',
      url: '/v1/acme/challenges',
      headers: { host: '127.0.0.1:8092', 'content-type': 'application/json' },
      remoteAddress: '127.0.0.1',
      body: JSON.stringify({ value: 'v2', ttlSeconds: 60 }),
    });
    expect(res.status).toBe(502);
    const answer = JSON.parse(String(res.body)) as Record<string, { code?: string }>;
    expect(answer.error?.code).toBe('CORAL_ERR_FLEET_INCOMPLETE');
    expect(answer.propagation).toMatchObject({ complete: false });

    // What the CLI does with such an answer.
    const admin = createServer((_req, res) => {
      res.writeHead(res.req.url === '/v1/acme/challenges' ? 502 : 500, {
        'content-type': 'application/json',
      });
      res.end(JSON.stringify(answer));
    }).listen(0, '127.0.0.1');
    await once(admin, 'listening');
    const port = (admin.address() as { port: number }).port;
    const cli = await runCli(['--admin', `http://127.0.0.1:${port}`, 'acme', 'set', 'v1']);
    admin.close();
    expect(cli.code).toBe(1);
    expect(JSON.parse(cli.out)).toMatchObject({ propagation: { complete: false } });
    expect(cli.err).toMatch(/CORAL_ERR_FLEET_INCOMPLETE: not applied by every live member/);
  });
});
