/**
 * The dashboard in a real browser: headless Chromium (Debian's, /usr/bin/chromium, driven by
 * playwright-core) against a fleet of three node processes on 127.0.B.11-13 under light load
 * (Coralized requests through two proxies, DNS queries). The browser reaches node 1 by a name
 * (mapped to its address by Chromium's host resolver rules), so the loopback rule does not apply
 * and it must sign in with the admin token like a remote operator. The page's numbers must equal
 * the counters node 1's /metrics shows once the load has stopped; a screenshot is saved under the
 * test's temporary directory. A page on another origin then tries to make the admin API act.
 *
 * Without Chromium this test fails: .ci/run installs it (apt-get install chromium).
 */
import { existsSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, SampleOrigin, fetchVia, resolveThrough } from '../../src/fleet/index.js';
import { rendezvousRank, urlKey } from '@coral/httpprx';
import { outcomeOf } from '../../src/metrics/metrics.js';
import { CHROMIUM, launchChromium, tmpDir, waitFor } from '../helpers.js';

const TOKEN = 'dashboard-test-token-0123456789';
const ADMIN_NAME = 'coral-admin.test';

const dataRoot = tmpDir('dashboard');
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 64 });
let fleet: Fleet;
let browser: Browser;
let attacker: Server | undefined;

/** Chromium, or why there is none: each test then fails with that reason (never skips). */
let noBrowser: Error | undefined;
function chromiumOrFail(): Browser {
  if (noBrowser) throw noBrowser;
  return browser;
}

beforeAll(async () => {
  await origin.listen();
  fleet = new Fleet({
    nodes: 3,
    dataRoot,
    env: {
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.origin.test=127.0.0.1',
      CORAL_ADMIN_TOKEN: TOKEN,
    },
  });
  const started = fleet.start(); // spawns every node before it waits for them
  if (!existsSync(CHROMIUM)) {
    noBrowser = new Error(
      `Chromium is not installed at ${CHROMIUM}: the dashboard test needs it ` +
        '(apt-get update && apt-get install -y chromium; .ci/run does this)',
    );
  } else {
    // launch() gives the browser a fresh profile directory of its own (removed on close).
    browser = await launchChromium([
      `--host-resolver-rules=MAP ${ADMIN_NAME} ${fleet.nodes[0]!.ip}`,
    ]).catch((err: Error) => {
      noBrowser = new Error(`Chromium at ${CHROMIUM} did not start: ${err.message}`);
      return undefined as unknown as Browser;
    });
  }
  await started;
}, 90_000);

afterAll(async () => {
  await browser?.close();
  attacker?.close();
  await fleet?.stop();
  await origin.close();
  if (fleet?.nodes.every((n) => n.process.exitCode === 0)) {
    // keep the screenshot: only the nodes' data directories go
    for (const n of fleet.nodes) rmSync(n.dataDir, { recursive: true, force: true });
  }
});

/** Counter values of a Prometheus text exposition: name → [labels, value][]. */
function parseMetrics(text: string): Map<string, [Record<string, string>, number][]> {
  const out = new Map<string, [Record<string, string>, number][]>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const list = out.get(m[1]!) ?? [];
    list.push([labels, Number(m[3])]);
    out.set(m[1]!, list);
  }
  return out;
}

function sum(
  metrics: Map<string, [Record<string, string>, number][]>,
  name: string,
  where: (labels: Record<string, string>) => boolean = () => true,
): number {
  return (metrics.get(name) ?? []).filter(([l]) => where(l)).reduce((a, [, v]) => a + v, 0);
}

async function tileValue(page: Page, id: string): Promise<{ value: number; text: string }> {
  const el = page.locator(`#${id}`);
  return {
    value: Number(await el.getAttribute('data-value')),
    text: (await el.textContent()) ?? '',
  };
}

describe('the dashboard in Chromium against a three-node fleet', () => {
  let page: Page;
  const problems: string[] = [];
  const objects: string[] = []; // paths node 1 is the designated fetcher of (the first test)
  const adminOrigin = () => `http://${ADMIN_NAME}:${fleet.nodes[0]!.adminPort}`;

  it('signs in with the token, then shows numbers equal to /metrics, the fleet, hot URLs and routes', async () => {
    const [n1, n2, n3] = fleet.nodes as [
      (typeof fleet.nodes)[0],
      (typeof fleet.nodes)[0],
      (typeof fleet.nodes)[0],
    ];
    const context = await chromiumOrFail().newContext({ viewport: { width: 1440, height: 1000 } });
    page = await context.newPage();

    // A browser that is not on loopback by the rules (it names the node) gets the login page.
    const first = await page.goto(`${adminOrigin()}/`);
    expect(first?.status()).toBe(401);
    await page.fill('#token', 'not-the-token-at-all');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('#login-error').textContent()).toContain('Wrong token');
    await page.fill('#token', TOKEN);
    await Promise.all([page.waitForURL(`${adminOrigin()}/`), page.click('button[type=submit]')]);
    const cookies = await context.cookies(adminOrigin());
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookies[0]!.value).not.toContain(TOKEN);
    // From here on the page must run clean: no script error, no CSP violation, no failed load.
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.reload();
    await page.waitForSelector('body[data-now]');

    // Light load: misses at node 1, peer copies at node 2, hits at both, DNS through two nodes,
    // one round per sample the node takes (so the charts have points to draw). The objects are
    // ones node 1 is the designated fetcher of (first in the rendezvous order of the three), so
    // node 1 fetches them from the origin itself and node 2 asks it, whatever the node ids are.
    const name = `www.origin.test.${origin.address.port}.nyud.net`;
    const fleetIds = await Promise.all(
      [n1, n2, n3].map(
        async (n) => (await n.admin.json<{ nodeId: string }>('GET', '/v1/node')).nodeId,
      ),
    );
    for (let k = 0; objects.length < 4 && k < origin.objects; k++) {
      const key = urlKey(`http://www.origin.test:${origin.address.port}/obj/${k}`);
      if (rendezvousRank(fleetIds[0]!, key, fleetIds) === 0) objects.push(`/obj/${k}`);
    }
    expect(objects, "four of the origin's 64 objects designated to node 1").toHaveLength(4);
    const lastSample = async (since: number) =>
      (
        await n1.admin.json<{ history: { t: number[] } }>('GET', `/v1/dashboard?since=${since}`)
      ).history.t.at(-1) ?? since;
    let seen = await lastSample(0);
    for (let round = 0; round < 3; round++) {
      const before = seen;
      seen = await waitFor(
        async () => {
          const t = await lastSample(before);
          return t > before ? t : undefined;
        },
        10_000,
        'a new sample',
      );
      for (const obj of objects) {
        expect((await fetchVia({ ip: n1.ip, port: n1.proxyPort }, name, obj)).status).toBe(200);
        expect((await fetchVia({ ip: n2.ip, port: n2.proxyPort }, name, obj)).status).toBe(200);
      }
      await resolveThrough({ ip: n1.ip, port: n1.dnsPort }, name);
      await resolveThrough({ ip: n3.ip, port: n3.dnsPort }, name);
    }
    expect((await fetchVia({ ip: n1.ip, port: n1.proxyPort }, name, objects[0]!)).status).toBe(200);
    const loadEnd = Date.now();

    // The page's next poll after the load: its numbers and /metrics read at that moment.
    await waitFor(
      async () => Number(await page.locator('body').getAttribute('data-now')) > loadEnd,
      15_000,
      'a dashboard update after the load',
    );
    const metrics = parseMetrics(await n1.admin.text('/metrics'));
    const byOutcome = (o: string) =>
      sum(metrics, 'coral_http_requests_total', (l) => outcomeOf(l.cache_status!) === o);
    const shown = {
      requests: await tileValue(page, 't-requests'),
      hit: await tileValue(page, 't-hit'),
      peer: await tileValue(page, 't-peer'),
      miss: await tileValue(page, 't-miss'),
      error: await tileValue(page, 't-error'),
      sent: await tileValue(page, 't-sent'),
      peerIn: await tileValue(page, 't-peer-bytes'),
      originIn: await tileValue(page, 't-origin-bytes'),
      offload: await tileValue(page, 't-offload'),
      dns: await tileValue(page, 't-dns'),
    };
    // 3 rounds × 4 objects + the last hit from clients, and node 2's peer requests.
    const total = sum(metrics, 'coral_http_requests_total');
    expect(total).toBeGreaterThanOrEqual(13);
    expect(shown.requests.value).toBe(total);
    expect(shown.requests.text).toBe(String(total));
    for (const o of ['hit', 'peer', 'miss', 'error'] as const) {
      expect(shown[o].value, o).toBe(byOutcome(o));
      expect(shown[o].text.replace(/,/g, ''), o).toBe(String(byOutcome(o)));
    }
    expect(byOutcome('miss')).toBeGreaterThan(0);
    expect(byOutcome('hit')).toBeGreaterThan(0);
    const sent = sum(metrics, 'coral_http_response_bytes_total', (l) => l.to === 'client');
    const originBytes = sum(metrics, 'coral_origin_fetch_bytes_total');
    expect(originBytes).toBeGreaterThan(0);
    expect(shown.sent.value).toBe(sent);
    expect(shown.originIn.value).toBe(originBytes);
    expect(shown.peerIn.value).toBe(sum(metrics, 'coral_peer_fetch_bytes_total'));
    expect(shown.offload.value).toBeCloseTo(1 - originBytes / sent, 12);
    expect(shown.offload.text).toBe(`${((1 - originBytes / sent) * 100).toFixed(1)}%`);
    expect(shown.dns.value).toBe(sum(metrics, 'coral_dns_answers_total'));
    expect(shown.dns.value).toBeGreaterThan(0);
    for (const [labels] of metrics.get('coral_dns_answers_total') ?? []) {
      const cell = page.locator(`#dns-reasons tr[data-reason="${labels.method}"] td[data-value]`);
      expect(Number(await cell.getAttribute('data-value'))).toBe(
        sum(metrics, 'coral_dns_answers_total', (l) => l.method === labels.method),
      );
    }

    // Node 2's page would show its peer fetches; node 1's shows the fleet and its tables.
    const fleetRows = page.locator('#fleet-body tbody tr');
    await expect.poll(() => fleetRows.count()).toBe(3);
    const ids = await fleetRows.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-node')));
    const nodeIds = await Promise.all(
      fleet.nodes.map(
        async (n) => (await n.admin.json<{ nodeId: string }>('GET', '/v1/node')).nodeId,
      ),
    );
    expect(new Set(ids)).toEqual(new Set(nodeIds));
    const hot = page.locator('#hot-body tbody tr');
    expect(await hot.count()).toBe(4);
    expect(await hot.first().locator('td.url').textContent()).toBe(
      `http://www.origin.test:${origin.address.port}${objects[0]}`,
    );
    expect(await hot.first().locator('td').nth(2).textContent()).toBe('4');
    expect(await page.locator('#routes-body tbody tr').count()).toBeGreaterThanOrEqual(2);

    const shot = join(dataRoot, 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`dashboard screenshot: ${shot}`);
    expect(problems).toEqual([]);

    // The session cookie reads; it does not act (mutating requests need the bearer token).
    const purge = await page.evaluate(async (url) => {
      const r = await fetch('/v1/cache/purge', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url }),
      });
      return { status: r.status, body: await r.text() };
    }, `http://www.origin.test:${origin.address.port}${objects[1]}`);
    expect(purge.status).toBe(401);
    expect(purge.body).toContain('CORAL_ERR_ADMIN_UNAUTHORIZED');
  });

  it('a page on another origin cannot make the admin API purge, even on loopback', async () => {
    const n1 = fleet.nodes[0]!;
    const victim = `http://www.origin.test:${origin.address.port}${objects[2]}`;
    const cached = async () =>
      (await n1.admin.json<{ objects: { url: string }[] }>('GET', '/v1/cache')).objects.some(
        (o) => o.url === victim,
      );
    expect(await cached()).toBe(true);
    // The attacker's page: a no-cors POST with a text body (no preflight), and a form post.
    const admin = `http://${n1.ip}:${n1.adminPort}`;
    attacker = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><form id=f method=post action="${admin}/v1/cache/purge" enctype="text/plain">
<input name='{"url":"${victim}","x":"' value='"}'></form>
<script>
fetch(${JSON.stringify(admin + '/v1/cache/purge')}, { method: 'POST', mode: 'no-cors',
  headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ url: ${JSON.stringify(victim)} }) })
  .finally(() => { document.title = 'fetched'; document.getElementById('f').submit(); });
</script>`);
    });
    await new Promise<void>((r) => attacker!.listen(0, '127.0.0.1', r));
    const page = await chromiumOrFail().newPage();
    const answers: number[] = [];
    page.on('response', (r) => {
      if (r.url().startsWith(admin)) answers.push(r.status());
    });
    await page.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`);
    await waitFor(() => answers.length >= 1, 10_000, 'the form post to reach the admin API');
    await page.close();
    expect(answers.every((s) => s === 403)).toBe(true);
    expect(await cached()).toBe(true);
  });
});
