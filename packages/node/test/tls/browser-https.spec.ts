/**
 * Issue 11, Must-show 4: a real browser loads an https site through a node's TLS listener.
 *
 * Headless Chromium (Debian's, /usr/bin/chromium, driven by playwright-core) resolves every name
 * of the zone to the node (`--host-resolver-rules`) and trusts the test CA of the zone's wildcard
 * certificate by its SPKI hash (`--ignore-certificate-errors-spki-list`), nothing else. The origin
 * speaks https only, with a certificate from a CA of its own that the node trusts through
 * `tls.originCa`. The browser starts at the Coralized https URL of `/`, which the origin
 * redirects (absolute `Location`) to `/index.html`; the page has a stylesheet, an image and a
 * script. The test checks from the origin's request log and the proxy's `Cache-Status` that every
 * object came through the proxy, once each, that no request left https or the Coralized name
 * (no mixed content), that the CSS, image and script took effect, and saves a screenshot under
 * the test's temporary directory.
 *
 * Without Chromium this test fails: .ci/run installs it (apt-get install chromium).
 */
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coralizeUrl } from '@coral/names';
import { issueCert, makeTestCa, type TestCa } from '@coral/testkit';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { CHROMIUM, launchChromium, randomSubnet, tmpDir } from '../helpers.js';

const dir = tmpDir('browser-https');
const ip = `127.0.${randomSubnet()}.71`;
/** 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

let origin: Server;
let originPort = 0;
const originLog: string[] = [];
let node: CoralNode;
let zoneCa: TestCa;
let browser: Browser | undefined;
let noBrowser: Error | undefined;

function page(): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Coral over https</title>
<link rel="stylesheet" href="/style.css"></head>
<body><h1 id="title">Served by Coral over https</h1>
<img id="logo" src="/logo.png" width="64" height="64" alt="logo">
<p id="script">the script did not run</p>
<script src="/app.js"></script></body></html>`;
}

beforeAll(async () => {
  const originCa = await makeTestCa({ name: 'origin CA' });
  const originCert = await issueCert(originCa, { dnsNames: ['www.origin.test'] });
  await writeFile(join(dir, 'origin-ca.pem'), originCa.cert);
  origin = createServer({ cert: originCert.chain, key: originCert.key }, (req, res) => {
    originLog.push(req.url ?? '');
    const cache = { 'cache-control': 'max-age=300' };
    switch (req.url) {
      case '/':
        res.writeHead(301, { location: `https://www.origin.test:${originPort}/index.html` });
        res.end();
        return;
      case '/index.html':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...cache });
        res.end(page());
        return;
      case '/style.css':
        res.writeHead(200, { 'content-type': 'text/css', ...cache });
        res.end('h1 { color: rgb(0, 128, 0); } img { image-rendering: pixelated; }');
        return;
      case '/logo.png':
        res.writeHead(200, { 'content-type': 'image/png', ...cache });
        res.end(PNG);
        return;
      case '/app.js':
        res.writeHead(200, { 'content-type': 'text/javascript', ...cache });
        res.end(
          "document.getElementById('script').textContent = 'the script ran over ' + location.protocol;",
        );
        return;
      default:
        res.writeHead(404);
        res.end();
    }
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  originPort = (origin.address() as { port: number }).port;

  zoneCa = await makeTestCa({ name: 'zone CA' });
  const zoneCert = await issueCert(zoneCa, { dnsNames: ['*.nyud.net', 'nyud.net'] });
  await writeFile(join(dir, 'zone.pem'), zoneCert.chain); // leaf + CA: Chromium matches the CA's SPKI
  await writeFile(join(dir, 'zone-key.pem'), zoneCert.key);
  node = await CoralNode.start(
    loadConfig({
      env: {
        CORAL_HOST: ip,
        CORAL_DNS_HOST: ip,
        CORAL_ADMIN_HOST: ip,
        CORAL_DATA_DIR: join(dir, 'node'),
        CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
        CORAL_HOSTS: 'www.origin.test=127.0.0.1',
        CORAL_TLS_CERT: join(dir, 'zone.pem'),
        CORAL_TLS_KEY: join(dir, 'zone-key.pem'),
        CORAL_TLS_ORIGIN_CA: join(dir, 'origin-ca.pem'),
        CORAL_LOG_LEVEL: 'silent',
      },
    }),
    { services: realServices, logger: createLogger({ level: 'silent' }) },
  );

  if (!existsSync(CHROMIUM)) {
    noBrowser = new Error(
      `Chromium is not installed at ${CHROMIUM} (apt-get update && apt-get install -y chromium; .ci/run does this)`,
    );
    return;
  }
  browser = await launchChromium([
    // Every name of the zone is this node; nothing else resolves.
    `--host-resolver-rules=MAP *.nyud.net ${ip}, MAP nyud.net ${ip}, EXCLUDE localhost`,
    `--ignore-certificate-errors-spki-list=${zoneCa.spkiSha256}`,
  ]).catch((err: Error) => {
    noBrowser = new Error(`Chromium at ${CHROMIUM} did not start: ${err.message}`);
    return undefined;
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await node?.stop();
  origin?.close();
});

describe('a browser on a Coralized https site', () => {
  it('loads the page, its CSS, image and script and a redirect through the proxy, over https only', async () => {
    if (noBrowser) throw noBrowser;
    const start = coralizeUrl(`https://www.origin.test:${originPort}/`, 'nyud.net');
    const host = new URL(start).host;
    expect(host).toBe(`www-origin-test---${originPort}.nyud.net:8443`);

    const context = await browser!.newContext();
    const tab = await context.newPage();
    const requests: string[] = [];
    const responses: { url: string; status: number; cacheStatus: string | undefined }[] = [];
    const messages: string[] = [];
    tab.on('request', (r) => requests.push(r.url()));
    tab.on('response', (r) =>
      responses.push({
        url: r.url(),
        status: r.status(),
        cacheStatus: r.headers()['cache-status'],
      }),
    );
    tab.on('console', (m) => messages.push(`${m.type()}: ${m.text()}`));
    const answer = await tab.goto(start, { waitUntil: 'load' });

    // The redirect was rewritten to the Coralized https URL and followed there.
    expect(tab.url()).toBe(`https://${host}/index.html`);
    expect(answer?.status()).toBe(200);
    expect(await tab.locator('#script').textContent()).toBe('the script ran over https:');
    expect(await tab.locator('#title').evaluate((e) => getComputedStyle(e).color)).toBe(
      'rgb(0, 128, 0)',
    );
    expect(await tab.locator('#logo').evaluate((e) => (e as HTMLImageElement).naturalWidth)).toBe(
      1,
    );

    // No mixed content: every request went over https to the Coralized name.
    const objects = ['/', '/index.html', '/style.css', '/logo.png', '/app.js'];
    expect(requests.filter((u) => !u.startsWith(`https://${host}/`))).toEqual([]);
    expect(new Set(requests.map((u) => new URL(u).pathname))).toEqual(new Set(objects));
    expect(messages.filter((m) => /mixed content|insecure/i.test(m))).toEqual([]);
    // Every answer came through the proxy (it adds Cache-Status), and the origin saw each object
    // once, from the proxy (the browser cannot even resolve the origin's name).
    const faviconless = responses.filter((r) => !r.url.endsWith('/favicon.ico'));
    for (const r of faviconless) expect(r.cacheStatus, r.url).toMatch(/^Coral;/);
    expect(responses.find((r) => r.url === start)?.status).toBe(301);
    expect([...originLog].filter((p) => p !== '/favicon.ico').sort()).toEqual([...objects].sort());

    const screenshot = join(dir, 'coral-https.png');
    await tab.screenshot({ path: screenshot, fullPage: true });
    process.stdout.write(`screenshot of the Coralized https page: ${screenshot}\n`);
    expect(existsSync(screenshot)).toBe(true);
    await context.close();
  });
});
