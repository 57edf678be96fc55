/**
 * The admin API's routing, validation and access rules, in-process over a recording backend.
 * (The same endpoints against a real composed node are in test/compose/node.spec.ts.)
 */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Contact, LookupStats } from '@coral/dsht';
import type { Decision, ProbeEntry } from '@coral/dnssrv';
import type { CacheListEntry } from '@coral/httpprx';
import type { AdminBackend, ClustersView } from '../../src/admin/backend.js';
import { AdminApi, type AdminRequest } from '../../src/admin/server.js';
import { parseKey } from '../../src/admin/keys.js';
import { CoralMetrics } from '../../src/metrics/metrics.js';

const token = 'admin-token-0123456789';

// What the recording backend answers with, in the shapes the real node gives.
const CLUSTERS: ClustersView = {
  levels: [{ level: 0, contacts: 1, buckets: { 159: 1 } }],
  clusters: null,
  liveProxies: [],
};
const contactAt = (level: number): Contact => ({
  id: new Uint8Array(20).fill(level),
  ip: '127.0.0.2',
  port: 8091,
});
const STATS: LookupStats = { hops: 1, messages: 1, level: 0, latencyMs: 2 };
const CACHED: CacheListEntry = {
  url: 'http://a/',
  key: 'aa'.repeat(20),
  status: 200,
  size: 5,
  sha256: 'bb'.repeat(32),
  storedAt: 0,
  expiresAt: 60_000,
  vary: [],
};
const PROBE: ProbeEntry = {
  prefix: '127.0.0.0/24',
  target: '127.0.0.1',
  rttMs: 1,
  inFlight: false,
};
const DECISION: Decision = {
  at: 0,
  transport: 'udp',
  client: '127.0.0.1',
  name: 'www.example.com.nyud.net',
  type: 1,
  rcode: 'NOERROR',
  method: 'random',
  detail: 'random',
  nodes: [],
  cached: false,
  outcome: 'sent',
};
const NOT_HERE = () => {
  throw new Error('not served by this backend (test/trust/fleet-keys.spec.ts covers it)');
};

function backend(calls: string[]): AdminBackend {
  const store = new Map<string, Uint8Array[]>();
  const hex = (k: Uint8Array) => Buffer.from(k).toString('hex');
  return {
    levels: 3,
    info: () => ({
      nodeId: 'ab'.repeat(20),
      version: '0.1.0',
      zone: 'nyud.net',
      advertiseIp: '127.0.0.1',
      startedAt: new Date(0).toISOString(),
      uptimeSeconds: 1,
      services: { proxy: null, dsht: null, dns: null, admin: null },
    }),
    readiness: () => ({ ready: calls.includes('ready'), checks: { dsht: true } }),
    clusters: () => CLUSTERS,
    routes: (level) => [contactAt(level)],
    localGet: (k) => (store.get(hex(k)) ?? []).map((value) => ({ value, levels: [0, 2] })),
    get: async (k) => ({ values: store.get(hex(k)) ?? [], stats: STATS }),
    put: async (k, v, ttl) => {
      calls.push(`put ${ttl}`);
      store.set(hex(k), [v]);
      return {
        stored: [{ level: 0, contact: contactAt(0), hop: 1 }],
        skippedLevels: [],
        stats: STATS,
      };
    },
    cacheList: () => [CACHED],
    cachePurge: async (url) => {
      calls.push(`purge ${url}`);
      return { purged: true, withdrawn: true };
    },
    probeCache: () => [PROBE],
    dnsDecisions: () => [DECISION],
    fleet: () => ({
      self: {
        nodeId: 'ab'.repeat(20),
        ip: '127.0.0.1',
        port: 8091,
        httpPort: 8090,
        dnsPort: 5353,
        region: null,
        clusters: [],
      },
      members: [],
      routes: [],
    }),
    fleetKeys: () => ({ mode: 'open', keys: [] }),
    installKey: NOT_HERE,
    useKey: NOT_HERE,
    removeKey: NOT_HERE,
    fleetAuth: NOT_HERE,
    ping: NOT_HERE,
  };
}

/** A request from loopback; a body goes as JSON unless the test says otherwise. */
function req(method: string, url: string, extra: Partial<AdminRequest> = {}): AdminRequest {
  const headers =
    extra.body !== undefined ? { 'content-type': 'application/json', ...extra.headers } : {};
  return {
    method,
    url,
    remoteAddress: '127.0.0.1',
    ...extra,
    headers: { ...headers, ...extra.headers },
  };
}

describe('AdminApi.handle', () => {
  const calls: string[] = [];
  const metrics = new CoralMetrics({ defaultMetrics: false });
  const api = new AdminApi({ backend: backend(calls), metrics }, { token });
  const body = async (r: AdminRequest) => {
    const res = await api.handle(r);
    return { status: res.status, json: res.body ? JSON.parse(res.body) : undefined, res };
  };

  it('answers health, readiness (503 until ready), node info and clusters', async () => {
    expect(await body(req('GET', '/healthz'))).toMatchObject({ status: 200, json: { ok: true } });
    expect(await body(req('GET', '/readyz'))).toMatchObject({
      status: 503,
      json: { ready: false },
    });
    calls.push('ready');
    expect((await body(req('GET', '/readyz'))).status).toBe(200);
    expect((await body(req('GET', '/v1/node'))).json.nodeId).toBe('ab'.repeat(20));
    expect((await body(req('GET', '/v1/clusters/'))).json).toEqual(CLUSTERS);
  });

  it('shows routing tables of one level or all, and refuses a bad level', async () => {
    expect((await body(req('GET', '/v1/dsht/routes?level=2'))).json).toEqual({
      level: 2,
      contacts: [{ id: '02'.repeat(20), ip: '127.0.0.2', port: 8091 }],
    });
    expect((await body(req('GET', '/v1/dsht/routes'))).json.levels).toHaveLength(3);
    const bad = await body(req('GET', '/v1/dsht/routes?level=3'));
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('CORAL_ERR_ADMIN_BAD_REQUEST');
  });

  it('puts and gets values by name or hex key, locally and over the network', async () => {
    const put = await body(
      req('PUT', '/v1/dsht/values/greeting', { body: JSON.stringify({ value: 'hi', ttl: 60 }) }),
    );
    expect(put.status).toBe(200);
    expect(calls).toContain('put 60');
    const hexKey = Buffer.from(parseKey('greeting')).toString('hex');
    expect(put.json.key).toBe(hexKey);
    const got = await body(req('GET', `/v1/dsht/values/${hexKey}`));
    expect(got.json.values).toEqual([{ base64: 'aGk=', text: 'hi' }]);
    expect(got.json.stats).toEqual(STATS);
    const local = (await body(req('GET', '/v1/dsht/local/greeting'))).json.values;
    expect(local).toEqual([expect.objectContaining({ text: 'hi', levels: [0, 2] })]);
  });

  it('rejects bad put bodies with every problem named', async () => {
    const cases = [
      'not json',
      JSON.stringify({ value: 'x' }),
      JSON.stringify({ value: 'x', ttl: 0, extra: 1 }),
    ];
    for (const b of cases) {
      const r = await body(req('PUT', '/v1/dsht/values/k', { body: b }));
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('CORAL_ERR_ADMIN_BAD_REQUEST');
    }
    const big = await body(
      req('PUT', '/v1/dsht/values/k', { body: JSON.stringify({ value: 'x'.repeat(513), ttl: 5 }) }),
    );
    expect(big.json.error.message).toMatch(/512/);
  });

  it('lists and purges the cache, probes and DNS decisions', async () => {
    expect((await body(req('GET', '/v1/cache'))).json.objects).toEqual([CACHED]);
    const purge = await body(
      req('POST', '/v1/cache/purge', { body: JSON.stringify({ url: 'http://www.example.com/a' }) }),
    );
    expect(purge.json).toEqual({ url: 'http://www.example.com/a', purged: true, withdrawn: true });
    expect(calls).toContain('purge http://www.example.com/a');
    const badUrl = await body(req('POST', '/v1/cache/purge', { body: '{"url":"ftp://x/"}' }));
    expect(badUrl.status).toBe(400);
    expect((await body(req('GET', '/v1/dns/probes'))).json.probes).toHaveLength(1);
    expect((await body(req('GET', '/v1/dns/decisions'))).json.decisions).toEqual([DECISION]);
  });

  it('exposes Prometheus metrics', async () => {
    metrics.proxy.request('hit', 'GET', 200);
    metrics.proxy.fastHit();
    metrics.dns.answer('view', 'NOERROR');
    metrics.dsht.rpc('GET', 'ok');
    metrics.dsht.lookup('get', 3, 12);
    const r = await api.handle(req('GET', '/metrics'));
    expect(r.headers['content-type']).toMatch(/text\/plain/);
    expect(r.body).toContain(
      'coral_http_requests_total{cache_status="hit",method="GET",status="200"} 1',
    );
    expect(r.body).toContain('coral_http_fast_hits_total 1');
    expect(r.body).toContain('coral_dns_answers_total{method="view",rcode="NOERROR"} 1');
    expect(r.body).toContain('coral_dsht_rpcs_total{type="GET",outcome="ok"} 1');
    expect(r.body).toContain('coral_dsht_lookup_hops_bucket{le="3",kind="get"} 1');
  });

  it('answers unknown paths 404 and wrong methods 405, HEAD without a body', async () => {
    expect((await body(req('GET', '/nope'))).json.error.code).toBe('CORAL_ERR_ADMIN_NOT_FOUND');
    expect((await body(req('DELETE', '/healthz'))).json.error.code).toBe(
      'CORAL_ERR_ADMIN_METHOD_NOT_ALLOWED',
    );
    const head = await api.handle(req('HEAD', '/healthz'));
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  it('refuses every endpoint but the probes to a non-loopback client without the token, and serves it with', async () => {
    const remote = { remoteAddress: '192.0.2.10' };
    for (const path of ['/metrics', '/v1/node', '/v1/cache', '/v1/dsht/local/k']) {
      const r = await body(req('GET', path, remote));
      expect(r.status).toBe(401);
      expect(r.res.headers['www-authenticate']).toMatch(/Bearer/);
    }
    const wrong = await body(
      req('GET', '/v1/node', { ...remote, headers: { authorization: 'Bearer nope' } }),
    );
    expect(wrong.status).toBe(401);
    const ok = await body(
      req('GET', '/v1/node', { ...remote, headers: { authorization: `Bearer ${token}` } }),
    );
    expect(ok.status).toBe(200);
    const noToken = new AdminApi({ backend: backend([]) }, {});
    const refused = await noToken.handle(
      req('GET', '/metrics', { ...remote, headers: { authorization: `Bearer ${token}` } }),
    );
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).error.code).toBe('CORAL_ERR_ADMIN_FORBIDDEN');
  });

  it('answers /healthz and /readyz to anyone (kubelets, load balancers), /metrics when public', async () => {
    const remote = { remoteAddress: '192.0.2.10' };
    for (const api of [
      new AdminApi({ backend: backend(['ready']) }, {}),
      new AdminApi({ backend: backend(['ready']) }, { token }),
    ]) {
      expect((await api.handle(req('GET', '/healthz', remote))).status).toBe(200);
      expect((await api.handle(req('GET', '/readyz', remote))).status).toBe(200);
      expect((await api.handle(req('GET', '/readyz/', remote))).status).toBe(200);
      expect((await api.handle(req('GET', '/metrics', remote))).status).not.toBe(200);
    }
    const scraped = new AdminApi(
      { backend: backend([]), metrics: new CoralMetrics({ defaultMetrics: false }) },
      { token, publicMetrics: true },
    );
    const metrics = await scraped.handle(req('GET', '/metrics', remote));
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/coral_http_requests_total/);
    expect((await scraped.handle(req('GET', '/v1/node', remote))).status).toBe(401);
    // A path that only looks like a probe is not one.
    expect((await scraped.handle(req('GET', '/healthz/../v1/node', remote))).status).toBe(401);
  });
});

describe('AdminApi over node:http', () => {
  it('serves loopback clients and bounds request bodies', async () => {
    const api = new AdminApi({ backend: backend([]) }, { maxBodyBytes: 100 });
    const { port } = await api.listen(0, '127.0.0.1');
    try {
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(await health.json()).toEqual({ ok: true });
      const status = await new Promise<number>((resolve, reject) => {
        const r = request(
          {
            host: '127.0.0.1',
            port,
            method: 'PUT',
            path: '/v1/dsht/values/k',
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        r.on('error', reject);
        r.end(JSON.stringify({ value: 'x'.repeat(200), ttl: 5 }));
      });
      expect(status).toBe(400);
    } finally {
      await api.close();
    }
  });
});

describe('the dashboard and browser sessions', () => {
  const remote = { remoteAddress: '192.0.2.10' };
  const metrics = new CoralMetrics({ defaultMetrics: false });
  const api = new AdminApi({ backend: backend([]), metrics }, { token });
  const cookieOf = (setCookie: string | undefined) => (setCookie ?? '').split(';')[0]!;

  it('serves the page to loopback with a policy that allows only its own assets', async () => {
    const r = await api.handle(req('GET', '/', { headers: { host: '127.0.0.1:8092' } }));
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = r.headers['content-security-policy']!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe|https?:|\*/);
    expect(r.headers['x-frame-options']).toBe('DENY');
    // every script and style the page loads is the node's own
    for (const m of r.body.matchAll(/(?:src|href)="([^"]+)"/g)) {
      expect(m[1]).toMatch(/^\/(dashboard\/|v1\/|metrics|logout)/);
    }
    expect(r.body).not.toMatch(/<script>|style="/);
  });

  it('serves its assets (uPlot from node_modules) with ETags, and nothing outside the table', async () => {
    for (const [name, type] of [
      ['app.js', 'text/javascript'],
      ['format.js', 'text/javascript'],
      ['uplot.js', 'text/javascript'],
      ['uplot.css', 'text/css'],
      ['app.css', 'text/css'],
      ['favicon.svg', 'image/svg+xml'],
    ] as const) {
      // assets carry no data: the login page needs them before any session
      const r = await api.handle(req('GET', `/dashboard/${name}`, remote));
      expect(r.status, name).toBe(200);
      expect(r.headers['content-type']).toContain(type);
      expect(r.body.length).toBeGreaterThan(100);
      const again = await api.handle(
        req('GET', `/dashboard/${name}`, {
          ...remote,
          headers: { 'if-none-match': r.headers.etag! },
        }),
      );
      expect(again.status).toBe(304);
      expect(again.body).toBe('');
    }
    expect((await api.handle(req('GET', '/dashboard/uplot.js'))).body).toMatch(/uPlot/);
    for (const path of [
      '/dashboard/package.json',
      '/dashboard/..%2f..%2fpackage.json',
      '/dashboard/',
    ]) {
      expect((await api.handle(req('GET', path))).status, path).toBe(404);
    }
  });

  it("serves every module the page's script imports (app.js and its imports, transitively)", async () => {
    const seen = new Set<string>();
    const todo = ['app.js'];
    while (todo.length > 0) {
      const name = todo.pop()!;
      if (seen.has(name)) continue;
      seen.add(name);
      const r = await api.handle(req('GET', `/dashboard/${name}`, remote));
      expect(r.status, name).toBe(200);
      expect(r.headers['content-type'], name).toContain('text/javascript');
      for (const m of r.body.matchAll(/^import .* from '\.\/([a-z0-9-]+\.js)';$/gm))
        todo.push(m[1]!);
    }
    expect(seen.size).toBeGreaterThan(2);
  });

  it('gives a remote browser the login page, and a session for the right token', async () => {
    const page = await api.handle(req('GET', '/', remote));
    expect(page.status).toBe(401);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('action="/login"');
    expect((await api.handle(req('GET', '/v1/dashboard', remote))).status).toBe(401);

    const wrong = await api.handle(req('GET', '/?token=nope', remote));
    expect(wrong.status).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();
    const right = await api.handle(req('GET', `/?token=${token}`, remote));
    expect(right.status).toBe(303);
    expect(right.headers.location).toBe('/');
    expect(right.headers['set-cookie']).toMatch(/HttpOnly; SameSite=Strict/);
    const cookie = cookieOf(right.headers['set-cookie']);

    const withCookie = { ...remote, headers: { cookie } };
    const dash = await api.handle(req('GET', '/', withCookie));
    expect(dash.status).toBe(200);
    expect(dash.body).toContain('action="/logout"');
    expect((await api.handle(req('GET', '/v1/dashboard', withCookie))).status).toBe(200);
    expect((await api.handle(req('GET', '/v1/node', withCookie))).status).toBe(200);
    // reads only: a purge or a put with the cookie alone is refused
    const purge = await api.handle(
      req('POST', '/v1/cache/purge', { ...withCookie, body: '{"url":"http://a.example/"}' }),
    );
    expect(purge.status).toBe(401);
    const put = await api.handle(
      req('PUT', '/v1/dsht/values/k', { ...withCookie, body: '{"value":"x","ttl":5}' }),
    );
    expect(put.status).toBe(401);

    const out = await api.handle(req('POST', '/logout', withCookie));
    expect(out.status).toBe(303);
    expect(out.headers['set-cookie']).toMatch(/^coral_admin=; .*Max-Age=0/);
  });

  it('takes the token from the login form, and only as a form from its own origin', async () => {
    const form = (body: string, headers: Record<string, string> = {}) =>
      api.handle(
        req('POST', '/login', {
          ...remote,
          body,
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        }),
      );
    expect((await form('token=wrong')).status).toBe(401);
    expect((await form('')).status).toBe(401);
    const ok = await form(`token=${encodeURIComponent(token)}`, {
      host: '192.0.2.1:8092',
      origin: 'http://192.0.2.1:8092',
    });
    expect(ok.status).toBe(303);
    expect(ok.headers['set-cookie']).toMatch(/^coral_admin=v1\./);
    const json = await api.handle(
      req('POST', '/login', { ...remote, body: JSON.stringify({ token }) }),
    );
    expect(json.status).toBe(415);
    expect(JSON.parse(json.body).error.code).toBe('CORAL_ERR_ADMIN_UNSUPPORTED_MEDIA_TYPE');
    const elsewhere = await form(`token=${token}`, {
      host: '192.0.2.1:8092',
      origin: 'http://evil.example',
    });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.headers['set-cookie']).toBeUndefined();
    const noToken = new AdminApi({ backend: backend([]) }, {});
    expect((await noToken.handle(req('GET', '/', remote))).status).toBe(403);
    expect((await noToken.handle(req('GET', `/?token=${token}`, remote))).status).toBe(403);
  });

  it('refuses mutating requests from other sites and non-JSON bodies, even on loopback', async () => {
    const calls: string[] = [];
    const local = new AdminApi({ backend: backend(calls) }, { token });
    const purge = (headers: Record<string, string>) =>
      local.handle(
        req('POST', '/v1/cache/purge', {
          body: '{"url":"http://a.example/"}',
          headers: { host: '127.0.0.1:8092', ...headers },
        }),
      );
    expect((await purge({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await purge({ origin: 'http://evil.example' })).status).toBe(403);
    const text = await purge({ 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(calls).toEqual([]);
    expect((await purge({ origin: 'http://127.0.0.1:8092' })).status).toBe(200);
    expect(calls).toEqual(['purge http://a.example/']);
  });

  it('answers /v1/dashboard from the same counters as /metrics, with history since a time', async () => {
    const m = new CoralMetrics({ defaultMetrics: false });
    const api2 = new AdminApi({ backend: backend([]), metrics: m }, { token });
    m.proxy.request('hit', 'GET', 200);
    m.proxy.request('stale', 'GET', 200);
    m.proxy.request('miss', 'GET', 200);
    m.proxy.request('peer', 'GET', 200);
    m.proxy.request('error', 'GET', 502);
    m.proxy.originFetch(300, true);
    m.proxy.peerFetch(100, true);
    m.traffic.response(1_000, false, 'http://www.example.com/a');
    m.traffic.response(50, true, 'http://www.example.com/a');
    m.dns.answer('rtt', 'NOERROR');
    m.dns.answer('rtt', 'NOERROR');
    m.dns.answer('view', 'NOERROR');
    const r = await api2.handle(req('GET', '/v1/dashboard'));
    expect(r.status).toBe(200);
    const v = JSON.parse(r.body);
    expect(v.totals).toMatchObject({
      requests: { hit: 1, stale: 1, miss: 1, peer: 1, error: 1 },
      outcomes: { hit: 2, miss: 1, peer: 1, error: 1 },
      bytes: { toClients: 1_000, toPeers: 50, fromOrigin: 300, fromPeers: 100 },
      offload: 0.7,
      dns: { rtt: 2, view: 1 },
    });
    expect(v.hotUrls.items).toEqual([{ url: 'http://www.example.com/a', count: 1, error: 0 }]);
    expect(v.fleet.self.nodeId).toBe('ab'.repeat(20));
    expect(v.dnsRecent).toEqual([DECISION]);
    expect(v.history).toEqual({ t: [], series: {} }); // not listening: nothing sampled yet
    expect((await api2.handle(req('GET', '/v1/dashboard?since=abc'))).status).toBe(400);
  });
});

describe('the dashboard over node:http', () => {
  it('keeps a history from the moment it listens, and refuses a rebinding Host on loopback', async () => {
    const m = new CoralMetrics({ defaultMetrics: false });
    const api = new AdminApi({ backend: backend([]), metrics: m }, {});
    const { port } = await api.listen(0, '127.0.0.1');
    try {
      type History = { history: { t: number[]; series: Record<string, number[]> } };
      const v = (await (await fetch(`http://127.0.0.1:${port}/v1/dashboard`)).json()) as History;
      expect(v.history.t).toHaveLength(1);
      expect(v.history.series['outcome.hit']).toEqual([0]);
      const since = v.history.t[0];
      const later = (await (
        await fetch(`http://127.0.0.1:${port}/v1/dashboard?since=${since}`)
      ).json()) as History;
      expect(later.history.t).toEqual([]);
      // a page of evil.example whose name now resolves to 127.0.0.1 (DNS rebinding)
      const status = await new Promise<number>((resolve, reject) => {
        const r = request(
          {
            host: '127.0.0.1',
            port,
            path: '/v1/dashboard',
            headers: { host: `evil.example:${port}` },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        r.on('error', reject);
        r.end();
      });
      expect(status).toBe(403);
    } finally {
      await api.close();
    }
  });
});
