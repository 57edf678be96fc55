/**
 * Member reports between members (trust/member-reports.ts, admin/member-routes.ts) over real
 * sockets: a report signed with the fleet's keys reaches the receiving proxy's `memberReported`
 * with the reporter's id; one from a stranger's key, unsigned, replayed, with a body other than
 * its signed digest, or not a report is refused and reaches nothing. (Whether a report is obeyed
 * is the proxy's decision: it is not — httpprx test/adversary/member-audit.spec.ts.)
 */
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpPeerSigner, Keyring } from '@coral/keyring';
import { afterEach, describe, expect, it } from 'vitest';
import { memberRoutes } from '../../src/admin/member-routes.js';
import { CoralNodeError } from '../../src/errors.js';
import { PeerAnswerAuth } from '../../src/peer/answers.js';
import { PeerRequests, bodyDigest, fixedAdminPort } from '../../src/peer/requests.js';
import { MemberReports, PEER_REPORT_PATH } from '../../src/trust/member-reports.js';
import { randomSubnet } from '../helpers.js';

const ip = `127.0.${randomSubnet()}.9`;
const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((c) => c()));

const SENDER = 'aa'.repeat(20);
const LIAR = 'cc'.repeat(20);
const report = {
  member: LIAR,
  host: 'origin.test.8080.nyud.net',
  path: '/a.jpg',
  url: 'http://origin.test:8080/a.jpg',
  evidence: {
    url: 'http://origin.test:8080/a.jpg',
    disagreements: ['bytes' as const],
    proof: true,
    member: { size: 3, sha256: 'ab'.repeat(32), etag: '"x"', lifetime: 86400 },
    origin: { size: 4, sha256: 'cd'.repeat(32), etag: '"x"', lifetime: 600 },
  },
};

/** A member's admin port serving the member routes, with the answers sealed as AdminApi does. */
async function receiver(key: string) {
  const keyring = Keyring.parse([key]);
  const answers = new PeerAnswerAuth(keyring);
  const taken: { report: unknown; reporter: string }[] = [];
  let port = 0;
  const peers = new PeerRequests({
    peerAuth: new HttpPeerSigner({ keyring }),
    answerAuth: answers,
    self: () => [`${ip}:${port}`],
    members: () => [],
    adminPorts: fixedAdminPort(0),
  });
  const reports = new MemberReports(
    { peers, proxy: { memberReported: (r, by) => taken.push({ report: r, reporter: by }) } },
    { nodeId: 'bb'.repeat(20) },
  );
  const routes = memberRoutes(reports, { quarantine: () => ({ quarantined: [], suspects: [] }) });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        remoteAddress: req.socket.remoteAddress,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const path = new URL(r.url, 'http://x').pathname;
      const route = routes.find(([m, re]) => m === r.method && re.test(path));
      const params = route ? (route[1].exec(path) ?? []).slice(1) : [];
      void (async () => {
        let status = 404;
        let body = '';
        try {
          if (route) {
            const out = await route[2](r, new URL(r.url, 'http://x'), params);
            status = out.status;
            body = typeof out.body === 'string' ? out.body : '';
          }
        } catch (err) {
          status = err instanceof CoralNodeError ? err.statusCode : 500;
          body = JSON.stringify({ error: { code: (err as CoralNodeError).code } });
        }
        const seal = peers.sealAnswer(r, status, body);
        res.writeHead(status, {
          'content-type': 'application/json',
          ...(seal ? { 'coral-peer-answer': seal } : {}),
        });
        res.end(body);
      })();
    });
  });
  server.listen(0, ip);
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return { port, taken };
}

function sender(key: string, port: number) {
  const keyring = Keyring.parse([key]);
  const peers = new PeerRequests({
    peerAuth: new HttpPeerSigner({ keyring }),
    answerAuth: new PeerAnswerAuth(keyring),
    members: () => [{ nodeId: 'bb'.repeat(20), ip }],
    adminPorts: fixedAdminPort(port),
  });
  return { peers, reports: new MemberReports({ peers, proxy: {} }, { nodeId: SENDER }) };
}

/** A raw POST from an attacker's socket. */
function post(port: number, path: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: ip,
        port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('member reports travel signed', () => {
  it("a member's signed report reaches the proxy with its reporter", async () => {
    const key = Keyring.generateKey();
    const r = await receiver(key);
    const s = sender(key, r.port);
    await s.reports.send(report);
    expect(r.taken).toEqual([{ report, reporter: SENDER }]);
  });

  it('a report is not sent to the member it accuses', async () => {
    const key = Keyring.generateKey();
    const r = await receiver(key);
    const s = sender(key, r.port);
    await s.reports.send({ ...report, member: 'bb'.repeat(20) });
    expect(r.taken).toEqual([]);
  });

  it('unsigned, foreign-keyed, replayed, tampered or malformed reports are refused', async () => {
    const key = Keyring.generateKey();
    const r = await receiver(key);
    const body = JSON.stringify({ reporter: SENDER, report });
    const path = `${PEER_REPORT_PATH}/${bodyDigest(body)}`;
    expect(await post(r.port, path, body)).toBe(403);
    const stranger = new HttpPeerSigner({ keyring: Keyring.parse([Keyring.generateKey()]) });
    const authority = `${ip}:${r.port}`;
    const foreign = stranger.sign({ method: 'POST', authority, path });
    expect(await post(r.port, path, body, { 'coral-peer-auth': foreign })).toBe(403);
    const fleet = new HttpPeerSigner({ keyring: Keyring.parse([key]) });
    const signed = fleet.sign({ method: 'POST', authority, path });
    const tampered = body.replace(LIAR, 'dd'.repeat(20));
    expect(await post(r.port, path, tampered, { 'coral-peer-auth': signed })).toBe(400);
    expect(await post(r.port, path, body, { 'coral-peer-auth': signed })).toBe(403); // replayed
    const junk = JSON.stringify({ reporter: SENDER, report: { member: 'x' } });
    const junkPath = `${PEER_REPORT_PATH}/${bodyDigest(junk)}`;
    const junkAuth = fleet.sign({ method: 'POST', authority, path: junkPath });
    expect(await post(r.port, junkPath, junk, { 'coral-peer-auth': junkAuth })).toBe(400);
    expect(r.taken).toEqual([]);
  });
});
