/**
 * Adversary: request targets that try to make the proxy fetch from another authority than the
 * site's origin (site mode) or the Coralized origin, over real TCP on loopback. The attacker's
 * target is its own listener on 127.0.0.66 that records every connection; private origins are
 * allowed (as the README's site example needs), so the address policy would NOT stop a fetch to
 * it — only the target rules do. Every attack must get a 400 with `Connection: close`, and no
 * connection may reach the attacker's listener.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { netDial } from '../../src/connect/smart-connect.js';
import type { Dial } from '../../src/connect/smart-connect.js';
import { get, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';
import { rawRequest, startTrap } from './attacker.js';
import type { Trap } from './attacker.js';

const SITE = 'www.school.test';
let trap: Trap;
let origin: Origin;
let proxy: ProxyHarness;
const dials: string[] = [];
const recordingDial: Dial = (t, signal) => {
  dials.push(`${t.address}:${t.port}`);
  return netDial(t, signal);
};

beforeAll(async () => {
  trap = await startTrap('127.0.0.66');
  origin = await startOrigin((req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=60', 'content-type': 'text/plain' });
    res.end(`origin saw ${req.method} ${req.url}`);
  });
  proxy = await startProxy(
    {
      sites: { [SITE]: `http://origin.test:${origin.port}` },
      allowPrivateOrigins: true,
      hosts: { 'origin.test': ['127.0.0.2'], 'trap.test': ['127.0.0.66'] },
    },
    { dial: recordingDial },
  );
});

afterAll(async () => {
  await proxy.close();
  await origin.close();
  await trap.close();
});

function request(method: string, target: string, host: string, body = ''): string {
  const len = body ? `content-length: ${body.length}\r\n` : '';
  return `${method} ${target} HTTP/1.1\r\nhost: ${host}\r\n${len}\r\n${body}`;
}

describe('site mode: the path is only ever a path on the site origin', () => {
  const T = () => `127.0.0.66:${trap.port}`;
  const N = () => `trap.test:${trap.port}`;
  const attacks: Array<[string, () => string]> = [
    ['network-path reference //host/x', () => `//${T()}/x`],
    ['network-path reference to a name //name/x', () => `//${N()}/admin`],
    ['backslash /\\host/x', () => `/\\${T()}/x`],
    ['backslashes /\\\\host/x', () => `/\\\\${N()}/x`],
    ['backslash later in the path', () => `/a\\..\\..\\${T()}/x`],
    ['encoded slashes /%2F%2Fhost/x', () => `/%2F%2F${T()}/x`],
    ['encoded lower-case slash /%2f/host/x', () => `/%2f/${T()}/x`],
    ['encoded backslash /%5Chost/x', () => `/%5C${T()}/x`],
    ['encoded backslashes /%5c%5chost/x', () => `/%5c%5c${N()}/x`],
    ['dot segments /a/../..//host', () => `/a/../..//${T()}/x`],
    ['dot segments that land on //host', () => `/a/..//${T()}/x`],
    ['single dot then //host', () => `/.//${T()}/x`],
    ['encoded dot segments /%2e%2e//host', () => `/%2e%2e//${T()}/x`],
    ['mixed encoded dots /a/%2E%2e/.%2e//host', () => `/a/%2E%2e/.%2e//${T()}/x`],
    ['absolute-form naming another authority', () => `http://${T()}/x`],
    ['absolute-form naming another name', () => `http://${N()}/x`],
    ['absolute-form with the site as userinfo', () => `http://${SITE}@${T()}/x`],
    ['absolute-form on the site with another port', () => `http://${SITE}:${trap.port}/x`],
    ['absolute-form https on an http port', () => `https://${SITE}/x`],
    ['asterisk-form', () => '*'],
    ['fragment in the target', () => `/x#//${T()}`],
  ];

  for (const [name, target] of attacks) {
    for (const method of ['GET', 'PUT'] as const) {
      it(`${method} ${name}: 400, Connection: close, nothing fetched`, async () => {
        const before = { trap: trap.connections.length, origin: origin.hits.length };
        const body = method === 'PUT' ? 'x=1' : '';
        const r = await rawRequest(proxy.port, request(method, target(), SITE, body));
        expect(r.status).toBe(400);
        expect(r.headers['x-coral-error']).toBe('CORAL_BAD_TARGET');
        expect(r.headers['connection']).toBe('close');
        await r.closed;
        expect(trap.connections.length).toBe(before.trap);
        expect(origin.hits.length).toBe(before.origin);
      });
    }
  }

  it('Coralized names get the same rules: //host and /\\host on a Coralized Host are 400', async () => {
    for (const target of [`//${T()}/x`, `/\\${T()}/x`, `/%2F${T()}/x`, `http://${T()}/x`]) {
      const r = await rawRequest(proxy.port, request('GET', target, origin.coralHost));
      expect(r.status, target).toBe(400);
      expect(r.headers['x-coral-error']).toBe('CORAL_BAD_TARGET');
    }
  });

  it('the attacker named in Host itself is not served (403, not an open proxy)', async () => {
    const r = await rawRequest(proxy.port, request('GET', `http://${T()}/x`, T()));
    expect(r.status).toBe(403);
    expect(r.headers['x-coral-error']).toBe('CORAL_NOT_CORALIZED');
  });

  it('after every attack: no connection reached the attacker, no dial went to its address', () => {
    expect(trap.connections).toEqual([]);
    expect(dials.filter((d) => d.startsWith('127.0.0.66:'))).toEqual([]);
  });

  // Controls: the same proxy does fetch legitimate targets, so the checks above can fail.

  it('control: each payload would select the attacker under URL-reference resolution', () => {
    const base = `http://origin.test:${origin.port}/`;
    expect(new URL(`//${T()}/x`, base).host).toBe(T());
    expect(new URL(`/\\${T()}/x`, base).host).toBe(T());
    expect(new URL(`/a/../..//${T()}/x`, `http://origin.test/`).pathname).toBe(`//${T()}/x`);
  });

  it('control: plain, empty-segment, dot-segment and same-authority absolute-form targets reach the origin', async () => {
    const cases: Array<[string, string]> = [
      ['/x?q=//evil', 'GET /x?q=//evil'],
      ['/a//b', 'GET /a//b'],
      ['/a/./b/../c', 'GET /a/c'],
      ['/a/%2e%2E/c', 'GET /c'],
      ['/a/..%2f..%2fb', 'GET /a/..%2f..%2fb'],
      [`http://${SITE}/abs`, 'GET /abs'],
      [`http://${SITE.toUpperCase()}:80/abs2`, 'GET /abs2'],
    ];
    for (const [target, seen] of cases) {
      const r = await get(proxy.port, SITE, target);
      expect(r.status, target).toBe(200);
      expect(r.body.toString(), target).toBe(`origin saw ${seen}`);
    }
    const put = await get(proxy.port, SITE, '/form', {}, 'PUT', '127.0.0.1', Buffer.from('a=1'));
    expect(put.body.toString()).toBe('origin saw PUT /form');
    expect(trap.connections).toEqual([]);
  });

  it('control: the trap records a connection when one is made', async () => {
    const other = await startTrap('127.0.0.67');
    try {
      const r = await rawRequest(
        other.port,
        'GET / HTTP/1.1\r\nhost: x\r\n\r\n',
        '127.0.0.1',
        other.ip,
      );
      expect(r.status).toBe(200);
      expect(other.connections).toHaveLength(1);
    } finally {
      await other.close();
    }
  });
});
