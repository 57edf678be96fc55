/**
 * route() is a function of the request: a routed context or a refusal, and nothing written to the
 * response (the proxy answers refusals and starts the 102 beats, ../proxy/gate.spec.ts and the
 * designated-fetcher specs cover that end to end). The origin gate sees the parsed origin.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { DESIGNATED_HEADER, PEER_AUTH_HEADER, PEER_HEADER } from '../../src/constants.js';
import type { GateRequest, OriginGate } from '../../src/kit/types.js';
import { urlKey } from '../../src/mapping/coral-name.js';
import type { PeerAuth } from '../../src/peer/auth.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { designatedHere } from '../../src/peer/rendezvous.js';
import { route } from '../../src/request/route.js';
import type { RouteConfig, RouteCore, Routed } from '../../src/request/route.js';

const SELF = 'a1'.repeat(20);
const OTHER = 'b2'.repeat(20);

function core(extra: Partial<RouteCore> = {}): RouteCore {
  return {
    via: `1.1 coral-${SELF.slice(0, 12)}`,
    peerAuth: undefined,
    members: undefined,
    self: { nodeId: SELF, ip: '127.0.0.1', httpPort: 8090 },
    links: { tlsPort: undefined, followHttpsUpgrade: true },
    ...extra,
  };
}

function config(gate?: OriginGate): RouteConfig {
  return {
    zones: ['nyud.net'],
    sites: new Map([
      ['site.example', { protocol: 'http:', hostname: 'origin.internal', port: 8080 }],
    ]),
    gate,
  };
}

/** A request as node:http hands it over, and its response, spied on for any write. */
function request(method: string, url: string, headers: Record<string, string>) {
  const req = new IncomingMessage(new Socket());
  req.method = method;
  req.url = url;
  req.headers = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  req.rawHeaders = Object.entries(headers).flat();
  const res = new ServerResponse(req);
  const writes = [
    vi.spyOn(res, 'writeHead'),
    vi.spyOn(res, 'write'),
    vi.spyOn(res, 'end'),
    vi.spyOn(res, 'writeProcessing'),
  ];
  return { req, res, untouched: () => writes.every((w) => w.mock.calls.length === 0) };
}

function refused(r: Routed) {
  if (r.kind !== 'refused') throw new Error(`routed, not refused: ${r.ctx.url}`);
  return r;
}

function routed(r: Routed) {
  if (r.kind !== 'routed') throw new Error(`refused: ${r.error.code}`);
  return r;
}

describe('route', () => {
  it('routes a Coralized GET to its origin URL without touching the response', () => {
    const { req, res, untouched } = request('GET', '/a?b=1', { Host: 'www.example.com.nyud.net' });
    const r = routed(route(core(), config(), req, res));
    expect(r.ctx.url).toBe('http://www.example.com/a?b=1');
    expect(r.ctx.mode).toBe('coral');
    expect(r.ctx.domain).toBe('www.example.com');
    expect(r.ctx.peer).toBe(false);
    expect(r.designated).toBe(false);
    expect(untouched()).toBe(true);
  });

  it('returns each refusal as a value with its code and extra fields, writing nothing', () => {
    const cases: Array<[string, string, Record<string, string>, string, Record<string, string>?]> =
      [
        [
          'GET',
          '/',
          { Host: 'www.example.com.nyud.net', Via: `1.1 coral-${SELF.slice(0, 12)}` },
          'CORAL_LOOP_DETECTED',
        ],
        ['GET', '/', {}, 'CORAL_BAD_HOST', { connection: 'close' }],
        [
          'GET',
          '//other/x',
          { Host: 'www.example.com.nyud.net' },
          'CORAL_BAD_TARGET',
          { connection: 'close' },
        ],
        ['GET', '/', { Host: 'www.example.com' }, 'CORAL_NOT_CORALIZED'],
        [
          'POST',
          '/',
          { Host: 'www.example.com.nyud.net' },
          'CORAL_METHOD_NOT_ALLOWED',
          { allow: 'GET, HEAD' },
        ],
      ];
    for (const [method, url, headers, code, extra] of cases) {
      const { req, res, untouched } = request(method, url, headers);
      const r = refused(route(core(), config(), req, res));
      expect(r.error.code, `${method} ${url} ${JSON.stringify(headers)}`).toBe(code);
      expect(r.headers).toEqual(extra);
      expect(r.peerRejected).toBeUndefined();
      expect(untouched()).toBe(true);
    }
  });

  it('a peer request that does not verify is refused with the reason, for the caller to count', () => {
    const auth: PeerAuth = { sign: () => 'sig', verify: () => 'bad-mac' };
    const { req, res, untouched } = request('GET', '/a', {
      Host: 'www.example.com.nyud.net',
      [PEER_HEADER]: '1',
      [PEER_AUTH_HEADER]: 'forged',
    });
    const r = refused(route(core({ peerAuth: auth }), config(), req, res));
    expect(r.error.code).toBe('CORAL_PEER_UNAUTHORIZED');
    expect(r.error.status).toBe(403);
    expect(r.peerRejected).toBe('bad-mac');
    expect(untouched()).toBe(true);
  });

  it('a designated ask is routed as designated; no 102 is written by route', () => {
    const members = new InMemoryFleetMembers({ rendezvous: true })
      .set(SELF, { ip: '127.0.0.1', httpPort: 8090 })
      .set(OTHER, { ip: '127.0.0.4', httpPort: 8090 });
    // A path whose key this node is designated for (rendezvous ranks are fixed by the key).
    let path = '';
    for (let i = 0; !path; i++) {
      if (designatedHere(members, SELF, urlKey(`http://x.example/p${i}`))) path = `/p${i}`;
    }
    const auth: PeerAuth = { sign: () => 'sig', verify: () => 'ok' };
    const { req, res, untouched } = request('GET', path, {
      Host: 'x.example.nyud.net',
      [PEER_HEADER]: '1',
      [PEER_AUTH_HEADER]: 'sig',
      [DESIGNATED_HEADER]: '1',
    });
    const r = routed(route(core({ peerAuth: auth, members }), config(), req, res));
    expect(r.designated).toBe(true);
    expect(r.ctx.peer).toBe(true);
    // Designated: the cache sees it as a client's request (it may go to the origin).
    expect(r.ctx.cache.peer).toBe(false);
    expect(untouched()).toBe(true);
  });

  describe('the origin gate', () => {
    it('is asked with the parsed origin, and its refusal is returned as it is', () => {
      const seen: GateRequest[] = [];
      const gate: OriginGate = (o) => {
        seen.push(o);
        return o.host === 'blocked.example'
          ? { status: 403, code: 'CORAL_ERR_ORIGIN_BLOCKED', message: 'blocked here' }
          : undefined;
      };
      const a = request('GET', '/x', { Host: 'BLOCKED.example.NYUD.net:8090' });
      const r = refused(route(core(), config(gate), a.req, a.res));
      expect(r.error).toEqual({
        status: 403,
        code: 'CORAL_ERR_ORIGIN_BLOCKED',
        message: 'blocked here',
      });
      expect(a.untouched()).toBe(true);
      const b = request('HEAD', '/y', { Host: 'site.example', [PEER_HEADER]: '1' });
      routed(route(core(), config(gate), b.req, b.res));
      expect(seen).toEqual([
        { host: 'blocked.example', url: 'http://blocked.example/x', mode: 'coral', peer: false },
        { host: 'origin.internal', url: 'http://origin.internal:8080/y', mode: 'site', peer: true },
      ]);
    });

    it('comes before the method check and after the Host is mapped', () => {
      const gate = vi.fn<OriginGate>(() => ({ status: 451, code: 'CORAL_X', message: 'no' }));
      const post = request('POST', '/', { Host: 'www.example.com.nyud.net' });
      expect(refused(route(core(), config(gate), post.req, post.res)).error.code).toBe('CORAL_X');
      const unmapped = request('GET', '/', { Host: 'www.example.com' });
      expect(refused(route(core(), config(gate), unmapped.req, unmapped.res)).error.code).toBe(
        'CORAL_NOT_CORALIZED',
      );
      expect(gate).toHaveBeenCalledTimes(1);
    });
  });
});
