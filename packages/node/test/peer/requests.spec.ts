/**
 * PeerRequests against real sockets: answers are believed only with their seal (an impostor at a
 * member's address, a seal of another fleet, a sealed answer changed in flight, an old answer
 * played back for a new request), and are read no further than the bound (a Content-Length past
 * it, an endless chunked body).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpPeerSigner, Keyring } from '@coral/keyring';
import { PEER_ANSWER_HEADER, PeerAnswerAuth } from '../../src/peer/answers.js';
import {
  PEER_ANSWER_TOO_LARGE,
  PEER_ANSWER_UNAUTHENTICATED,
  PeerRequests,
  fixedAdminPort,
} from '../../src/peer/requests.js';
import { randomSubnet } from '../helpers.js';

const ip = `127.0.${randomSubnet()}.7`;
const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((c) => c()));

async function member(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(handler);
  server.listen(0, ip);
  await once(server, 'listening');
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return (server.address() as AddressInfo).port;
}

function requests(port: number, key: string, maxAnswerBytes?: number) {
  const keyring = Keyring.parse([key]);
  return new PeerRequests(
    {
      peerAuth: new HttpPeerSigner({ keyring }),
      answerAuth: new PeerAnswerAuth(keyring),
      members: () => [{ nodeId: 'ab'.repeat(20), ip }],
      adminPorts: fixedAdminPort(port),
    },
    { timeoutMs: 3_000, ...(maxAnswerBytes ? { maxAnswerBytes } : {}) },
  );
}

const page = JSON.stringify({ entries: [], completeSince: 0 });

describe('PeerRequests answers', () => {
  it('believes a sealed answer and nothing else', async () => {
    const key = Keyring.generateKey();
    const seal = new PeerAnswerAuth(Keyring.parse([key]));
    const stranger = new PeerAnswerAuth(Keyring.parse([Keyring.generateKey()]));
    let mode = 'sealed';
    let captured: { auth: string; header: string } | undefined;
    const port = await member((req, res) => {
      const auth = String(req.headers['coral-peer-auth']);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (mode === 'sealed' || mode === 'tampered') {
        headers[PEER_ANSWER_HEADER] = seal.seal(auth, 200, page);
        captured ??= { auth, header: headers[PEER_ANSWER_HEADER] };
      }
      if (mode === 'stranger') headers[PEER_ANSWER_HEADER] = stranger.seal(auth, 200, page);
      if (mode === 'replayed') headers[PEER_ANSWER_HEADER] = captured!.header;
      res.writeHead(200, headers);
      res.end(mode === 'tampered' ? page.replace('0}', '9}') : page);
    });
    const peers = requests(port, key);
    const m = peers.members()[0]!;
    const ok = await peers.send(m, 'GET', '/v1/peer/purges?since=0');
    expect(ok).toMatchObject({ ok: true, status: 200, body: { entries: [], completeSince: 0 } });
    for (const bad of ['impostor', 'stranger', 'tampered', 'replayed']) {
      mode = bad;
      const r = await peers.send(m, 'GET', '/v1/peer/purges?since=0');
      expect(r, bad).toMatchObject({ ok: false, status: 200, error: PEER_ANSWER_UNAUTHENTICATED });
      expect(r.body, bad).toBeUndefined();
    }
  });

  it('refuses an answer larger than the bound without reading it all', async () => {
    const key = Keyring.generateKey();
    let mode = 'declared';
    let written = 0;
    const port = await member((_req, res) => {
      if (mode === 'declared') {
        res.writeHead(200, { 'content-length': String(1 << 30) });
        res.write('{');
        return; // never ends: only the declared length can refuse it in time
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      const pump = () => {
        while (!res.destroyed && written < 256 * 1024 * 1024 && res.write(chunk)) {
          written += chunk.length;
        }
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    const peers = requests(port, key, 64 * 1024);
    const m = peers.members()[0]!;
    expect(await peers.send(m, 'GET', '/v1/peer/purges')).toMatchObject({
      ok: false,
      error: PEER_ANSWER_TOO_LARGE,
    });
    mode = 'endless';
    expect(await peers.send(m, 'GET', '/v1/peer/purges')).toMatchObject({
      ok: false,
      error: PEER_ANSWER_TOO_LARGE,
    });
    expect(written).toBeLessThan(256 * 1024 * 1024);
  });
});
