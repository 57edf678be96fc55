/**
 * Issue 29, Must-show 7: the README's recipes run as printed, by real processes.
 *
 * - "A keyed fleet by hand": the commands are read out of README.md's section and run with `sh`
 *   in the checkout — `npm start`, the second node's `npx coral-node start`, `status`, `keys
 *   status`, `purge --prefix` and `acme set` — then verified on node 2 itself: it no longer serves
 *   the purged object from its cache, and its own DNS server answers the TXT value. The banner's
 *   join line of node 1 is run as printed too, for a third node.
 * - The private-origin recipe (an http origin on port 8080): the banner's https curl line is read
 *   from the node's output and the request it describes is made with Node's https client,
 *   trusting the node's local CA: it gets the origin's page.
 *
 * What a test must change, and only that, is substituted: the recipe's 127.0.0.1 becomes a
 * loopback address of the test's own (the nodes bind it: CORAL_HOST, CORAL_DNS_HOST,
 * CORAL_ADMIN_HOST, and client commands without --admin get CORAL_ADMIN_URL), data directories
 * go to a temporary directory, the origin (www.example.com, www.mysite.test:8080) is a local one
 * (CORAL_HOSTS, CORAL_ALLOW_PRIVATE_ORIGINS where the recipe does not set it already), and `dig`
 * is asked with Node's resolver. Commands run with the PATH of a fresh shell: no
 * node_modules/.bin, so a bare `coral-node` would not be found.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/cli/client.js';
import { fetchVia, stopProcess } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const PATH = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((p) => !/node_modules[/\\]\.bin/.test(p))
  .join(delimiter);

/** The commands of the first sh block after `heading`: continuations joined, comments dropped. */
function recipe(heading: string): string[] {
  const from = readme.indexOf(heading);
  expect(from, heading).toBeGreaterThan(-1);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(from))![1]!;
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** An origin with a page at every path, cacheable, counting what it is asked. */
class Origin {
  readonly counts = new Map<string, number>();
  readonly #server: Server = createServer((req, res) => {
    this.counts.set(req.url!, (this.counts.get(req.url!) ?? 0) + 1);
    const body = `my site: ${req.url}\n`;
    res.writeHead(200, {
      'content-type': 'text/plain',
      'content-length': String(body.length),
      'cache-control': 'public, max-age=3600',
    });
    res.end(body);
  });
  port = 0;
  async listen(): Promise<this> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    this.port = (this.#server.address() as AddressInfo).port;
    return this;
  }
  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((r) => this.#server.close(() => r()));
  }
}

/** A long-running command (a node) in its own process group, its output kept. */
class Shell {
  out = '';
  readonly child: ChildProcess;
  constructor(command: string, env: Record<string, string>) {
    this.child = spawn('sh', ['-c', command], {
      cwd: root,
      detached: true,
      // The sampled audit draws at random and these tests count origin fetches: off (in the
      // environment, the recipe's commands as printed).
      env: { PATH, HOME: process.env.HOME ?? '', CORAL_PROXY_AUDIT_FRACTION: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (c: Buffer) => (this.out += c.toString()));
    this.child.stderr!.on('data', (c: Buffer) => (this.out += c.toString()));
  }
  line(prefix: string): Promise<string> {
    return waitFor(
      () => {
        if (this.child.exitCode !== null)
          throw new Error(`exited ${this.child.exitCode}:\n${this.out}`);
        return this.out
          .split('\n')
          .find((l) => l.trim().startsWith(prefix))
          ?.trim();
      },
      120_000,
      `a line starting with ${prefix}`,
    );
  }
  /** Until the node behind `admin` is ready; throws with the output when the command ended. */
  ready(admin: AdminClient, what: string): Promise<unknown> {
    return waitFor(
      async () => {
        if (this.child.exitCode !== null) {
          throw new Error(`${what}: exited ${this.child.exitCode}:\n${this.out}`);
        }
        return admin.json<{ ready: boolean }>('GET', '/readyz').then(
          (r) => r.ready,
          () => false,
        );
      },
      120_000,
      what,
    );
  }
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    try {
      process.kill(-this.child.pid!, 'SIGTERM');
    } catch {
      return;
    }
    await stopProcess(this.child, 10_000);
  }
}

/** A client command, as printed, to its end. */
function sh(command: string, env: Record<string, string>) {
  return new Promise<{ code: number; out: string; err: string }>((resolve) => {
    execFile(
      'sh',
      ['-c', command],
      { cwd: root, env: { PATH, HOME: process.env.HOME ?? '', ...env }, timeout: 60_000 },
      (err, out, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out, err: stderr }),
    );
  });
}

const shells: Shell[] = [];
const origins: Origin[] = [];
afterAll(async () => {
  for (const s of shells.reverse()) await s.stop();
  for (const o of origins) await o.close();
});

describe('README "A keyed fleet by hand", as printed', () => {
  const subnet = randomSubnet();
  const ip = `127.0.${subnet}.21`;
  const third = `127.0.${subnet}.22`;
  const dir = tmpDir('readme-fleet');
  let origin: Origin;
  let commands: string[];
  const bind = (at: string) => ({ CORAL_HOST: at, CORAL_DNS_HOST: at, CORAL_ADMIN_HOST: at });
  const local = {
    CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
    CORAL_HOSTS: 'www.example.com=127.0.0.1',
    CORAL_LOG_LEVEL: 'warn',
  };
  const substitute = (c: string) =>
    c
      .replaceAll('127.0.0.1', ip)
      .replaceAll('$(cat data/fleet.key)', `$(cat ${dir}/data/fleet.key)`)
      .replaceAll('./data2', `${dir}/data2`)
      .replaceAll('http://www.example.com/', `http://www.example.com:${origin.port}/`);

  beforeAll(async () => {
    origin = await new Origin().listen();
    origins.push(origin);
    commands = recipe('### A keyed fleet by hand').map(substitute);
  });

  it('runs two nodes, and purge and ACME reach node 2 (verified on node 2)', async () => {
    expect(commands[0]).toBe('npm start');
    const node1 = new Shell(commands[0]!, { ...bind(ip), ...local, CORAL_DATA_DIR: `${dir}/data` });
    shells.push(node1);
    const admin1 = new AdminClient({ url: `http://${ip}:8092` });
    const join = await node1.line('CORAL_FLEET_KEYS=$(cat ');
    await node1.ready(admin1, 'node 1 ready');

    expect(commands[1]).toMatch(/ npx coral-node start$/);
    const node2 = new Shell(commands[1]!, { ...bind(ip), ...local });
    shells.push(node2);
    const admin2 = new AdminClient({ url: `http://${ip}:8192` });
    await node2.ready(admin2, 'node 2 ready');
    // Client commands without --admin talk to node 1 (the recipe's default, 127.0.0.1:8092).
    const client = { CORAL_ADMIN_URL: `http://${ip}:8092` };

    const status = await sh(commands[2]!, client);
    expect(status.code, status.err).toBe(0);
    expect(JSON.parse(status.out)).toMatchObject({ ready: true });
    await waitFor(
      async () => {
        const keys = await sh(commands[3]!, client);
        const state = JSON.parse(keys.out) as { mode: string; members: { port: number }[] };
        return state.mode === 'keyed' && state.members.some((m) => m.port === 8191);
      },
      30_000,
      'node 1 lists node 2 among its members',
    );

    // Node 2 holds a copy of the object (a hit on its second fetch).
    const host = `www.example.com.${origin.port}.nyud.net`;
    const path = '/page/1';
    for (const through of [8190, 8190, 8090]) {
      const r = await fetchVia({ ip, port: through }, host, path);
      expect(r.status).toBe(200);
    }
    const objectUrl = `http://www.example.com:${origin.port}${path}`;
    const cachedOn2 = async () =>
      (await admin2.json<{ objects: { url: string }[] }>('GET', '/v1/cache')).objects.some(
        (o) => o.url === objectUrl,
      );
    await waitFor(cachedOn2, 10_000, 'node 2 caches the object');
    expect((await fetchVia({ ip, port: 8190 }, host, path)).cacheStatus).toMatch(/hit/);

    // purge --prefix through node 1 reaches node 2 at its own admin port.
    expect(commands[4]).toMatch(/ purge --prefix /);
    const purge = await sh(commands[4]!, client);
    expect(purge.code, `${purge.out}\n${purge.err}`).toBe(0);
    expect(purge.out).toMatch(new RegExp(`${ip.replaceAll('.', '\\.')}:8192  1\\n`));
    expect(await cachedOn2()).toBe(false);
    const before = origin.counts.get(path) ?? 0;
    const again = await fetchVia({ ip, port: 8190 }, host, path);
    expect(again.status).toBe(200);
    expect(again.cacheStatus).not.toMatch(/hit/);
    expect(origin.counts.get(path)).toBe(before + 1);

    // acme set through node 1: node 2's own DNS server answers it (the recipe's dig line).
    expect(commands[5]).toMatch(/ acme set /);
    const acme = await sh(commands[5]!, client);
    expect(acme.code, `${acme.out}\n${acme.err}`).toBe(0);
    const value = commands[5]!.split(/\s+/).at(-1)!;
    const dig = /^dig \+short @(\S+) -p (\d+) (\S+) TXT$/.exec(commands[6]!)!;
    expect(dig.slice(1)).toEqual([ip, '5354', '_acme-challenge.nyud.net']);
    const resolver = new Resolver({ timeout: 2_000, tries: 2 });
    resolver.setServers([`${dig[1]}:${dig[2]}`]);
    expect((await resolver.resolveTxt(dig[3]!)).map((c) => c.join(''))).toEqual([value]);

    // Node 1's banner says how to join it; run that line as printed, for a third node.
    const node3 = new Shell(join, { ...bind(third), CORAL_DATA_DIR: `${dir}/data3`, ...local });
    shells.push(node3);
    await node3.ready(new AdminClient({ url: `http://${third}:8092` }), 'node 3 ready');
    await waitFor(
      async () =>
        (await admin1.json<{ members: { ip: string }[] }>('GET', '/v1/fleet/auth')).members.some(
          (m) => m.ip === third,
        ),
      30_000,
      'node 1 lists node 3',
    );
  }, 300_000);
});

describe("README's private-origin recipe: the banner's https line", () => {
  it('fetches the origin page over https, trusting the local CA', async () => {
    const ip = `127.0.${randomSubnet()}.23`;
    const origin = await new Origin().listen();
    origins.push(origin);
    const line = /`(CORAL_HOSTS=www\.mysite\.test=127\.0\.0\.1 [^`]*npm start)`/.exec(readme)?.[1];
    expect(line).toMatch(/CORAL_EXAMPLE_ORIGIN=http:\/\/www\.mysite\.test:8080\//);
    const command = line!.replaceAll(':8080/', `:${origin.port}/`);
    const node = new Shell(command, {
      ...{ CORAL_HOST: ip, CORAL_DNS_HOST: ip, CORAL_ADMIN_HOST: ip },
      CORAL_DATA_DIR: join(tmpDir('readme-https'), 'data'),
      CORAL_LOG_LEVEL: 'warn',
    });
    shells.push(node);
    const curl = await node.line('curl --cacert ');
    const [, ca, resolve, url] = /^curl --cacert (\S+) --resolve (\S+) (\S+)$/.exec(curl)!;
    const [name, port, address] = resolve!.split(':') as [string, string, string];
    expect(name).toBe(`www-mysite-test---h${origin.port}.nyud.net`);
    const u = new URL(url!);
    expect(u.hostname).toBe(name);
    const page = await new Promise<{ status: number; body: string }>((done, fail) => {
      const req = httpsRequest(
        {
          host: address,
          port: Number(port),
          servername: name,
          path: u.pathname,
          headers: { host: u.host },
          ca: readFileSync(ca!),
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => done({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', fail);
      req.end();
    });
    expect(page).toEqual({ status: 200, body: 'my site: /\n' });
  }, 180_000);
});
