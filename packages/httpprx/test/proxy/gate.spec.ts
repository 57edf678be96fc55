/**
 * The origin gate (`ProxyComponents.gate`): route() asks it with the origin a request names, and
 * a refusal is answered before any cache lookup, peer or origin fetch — peer requests included.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PEER_HEADER } from '../../src/constants.js';
import type { GateRequest, GateRefusal } from '../../src/kit/types.js';
import { get, httpDate, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const BLOCKED: GateRefusal = {
  status: 403,
  code: 'CORAL_ERR_ORIGIN_BLOCKED',
  message: 'origin.test is blocked on this node',
};

async function setup(): Promise<{ px: ProxyHarness; origin: Origin; seen: GateRequest[] }> {
  const seen: GateRequest[] = [];
  const px: ProxyHarness = await startProxy(
    {},
    {
      gate: (o) => {
        seen.push(o);
        return o.host === 'origin.test' ? BLOCKED : undefined;
      },
    },
  );
  const origin = await startOrigin((_req, res) => {
    res.writeHead(200, {
      date: httpDate(px.clock.now()),
      'cache-control': 'max-age=600',
      'content-type': 'text/plain',
    });
    res.end('body');
  });
  cleanups.push(
    () => origin.close(),
    () => px.close(),
  );
  return { px, origin, seen };
}

describe('the origin gate', () => {
  it('refuses what it refuses with its status and code, and nothing reaches the origin', async () => {
    const { px, origin, seen } = await setup();
    const r = await get(px.port, origin.coralHost, '/a');
    expect(r.status).toBe(403);
    expect(r.headers['x-coral-error']).toBe('CORAL_ERR_ORIGIN_BLOCKED');
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers['cache-status']).toBe('Coral; detail=CORAL_ERR_ORIGIN_BLOCKED');
    expect(r.body.toString()).toContain('origin.test is blocked on this node');
    const head = await get(px.port, origin.coralHost, '/a', {}, 'HEAD');
    expect(head.status).toBe(403);
    expect(head.body.length).toBe(0);
    // A member asking is refused the same way.
    const peer = await get(px.port, origin.coralHost, '/a', { [PEER_HEADER]: '1' });
    expect(peer.status).toBe(403);
    expect(peer.headers['x-coral-error']).toBe('CORAL_ERR_ORIGIN_BLOCKED');
    expect(origin.hits).toHaveLength(0);
    const url = `http://origin.test:${origin.port}/a`;
    expect(seen).toEqual([
      { host: 'origin.test', url, mode: 'coral', peer: false },
      { host: 'origin.test', url, mode: 'coral', peer: false },
      { host: 'origin.test', url, mode: 'coral', peer: true },
    ]);
  });

  it('lets every other origin through to the cache and the origin', async () => {
    const { px, origin, seen } = await setup();
    // Another origin: other.test is 127.0.0.3 in the harness's hosts map.
    const other = await startOrigin((_req, res) => {
      res.writeHead(200, { date: httpDate(px.clock.now()), 'cache-control': 'max-age=600' });
      res.end('other');
    }, '127.0.0.3');
    cleanups.push(() => other.close());
    const host = `other.test.${other.port}.nyud.net`;
    const r1 = await get(px.port, host, '/b');
    expect(r1.status).toBe(200);
    expect(r1.body.toString()).toBe('other');
    const r2 = await get(px.port, host, '/b');
    expect(r2.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(other.hits).toHaveLength(1);
    expect(origin.hits).toHaveLength(0);
    expect(seen.map((o) => o.host)).toContain('other.test');
  });
});
