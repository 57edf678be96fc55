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
import { PeerAnswerAuth } from '../../src/peer/answers.js';
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
      { store, ...keyed(), members: () => [{ nodeId: 'ab'.repeat(20), ip: down }] },
      { zone: 'nyud.net', adminPort: 8092 },
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

    // What the CLI does with such an answer.
    const admin = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(r));
    }).listen(0, '127.0.0.1');
    await once(admin, 'listening');
    const port = (admin.address() as { port: number }).port;
    const cli = await runCli(['--admin', `http://127.0.0.1:${port}`, 'acme', 'set', 'v1']);
    admin.close();
    expect(cli.code).toBe(1);
    expect(cli.err).toMatch(/not applied by every live member/);
  });
});
