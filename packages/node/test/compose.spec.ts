/**
 * docker-compose.yml, run without Docker: every service's command (the Dockerfile's ENTRYPOINT
 * plus the service's command, or the service's own entrypoint) runs natively with the service's
 * environment (interpolated like Compose does). The only changes are those a container gets for
 * free: service names map to loopback addresses through the `hosts` config, each process binds its
 * own address, and volumes are temporary directories. The fleet must form and serve a Coralized URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AdminClient } from '../src/cli/client.js';
import { fetchVia, objectBody, resolveThrough, stopProcess } from '../src/fleet/index.js';
import { DEFAULT_ORIGIN_OBJECT_BYTES } from '../src/fleet/origin.js';
import { Keyring } from '@coral/keyring';
import { randomSubnet, tmpDir, waitFor } from './helpers.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const token = 'compose-test-token-0123456789';
const subnet = randomSubnet();
const dataRoot = tmpDir('compose');
const children: ChildProcess[] = [];

interface Service {
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  hostname?: string;
  volumes?: string[];
  ports?: string[];
  networks?: Record<string, { aliases?: string[] }>;
}

/** Compose's variable interpolation: ${VAR}, ${VAR:-default}, ${VAR:?error}. */
function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(
    /\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g,
    (_m, name: string, op?: string, arg?: string) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (op === '-') return arg ?? '';
      if (op === '?') throw new Error(`compose: ${name} is required: ${arg}`);
      return '';
    },
  );
}

function dockerEntrypoint(): string[] {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const m = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile);
  if (!m) throw new Error('Dockerfile has no exec-form ENTRYPOINT');
  return JSON.parse(m[1]!) as string[];
}

function launch(name: string, argv: string[], env: Record<string, string>): ChildProcess {
  const [cmd, ...args] = argv;
  const log = openSync(join(dataRoot, `${name}.log`), 'a');
  const child = spawn(cmd === 'node' ? process.execPath : cmd!, args, {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  children.push(child);
  return child;
}

afterAll(async () => {
  await Promise.all(children.map((c) => stopProcess(c, 10_000)));
});

describe('docker-compose.yml run natively', () => {
  it('restarts a node that exits (a fatal error exits 1: its supervisor starts it again)', () => {
    const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as { services: Record<string, Service & { restart?: string }> };
    const nodes = Object.values(compose.services).filter((svc) => svc.command?.[0] === 'start');
    expect(nodes.length).toBeGreaterThanOrEqual(3);
    for (const svc of nodes)
      expect(['always', 'unless-stopped', 'on-failure']).toContain(svc.restart);
  });

  it('forms a fleet from the first node and serves a Coralized URL', async () => {
    const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as {
      services: Record<string, Service>;
    };
    const hostEnv = { CORAL_ADMIN_TOKEN: token, CORAL_FLEET_KEYS: Keyring.generateKey() };
    const names = Object.keys(compose.services);
    const nodeNames = names.filter((n) => compose.services[n]!.command?.[0] === 'start');
    expect(nodeNames.length).toBeGreaterThanOrEqual(3);
    const originName = names.find((n) => !nodeNames.includes(n))!;
    const origin = compose.services[originName]!;

    // Addresses for every service name and alias, like the compose network's DNS.
    const address = new Map<string, string>();
    address.set(originName, `127.0.${subnet}.10`);
    for (const alias of origin.networks?.default?.aliases ?? [])
      address.set(alias, `127.0.${subnet}.10`);
    nodeNames.forEach((n, i) => {
      const ip = `127.0.${subnet}.${11 + i}`;
      address.set(n, ip);
      if (compose.services[n]!.hostname) address.set(compose.services[n]!.hostname, ip);
    });
    const hostsEnv = [...address].map(([n, ip]) => `${n}=${ip}`).join(',');

    const originEnv = Object.fromEntries(
      Object.entries(origin.environment ?? {}).map(([k, v]) => [
        k,
        interpolate(String(v), hostEnv),
      ]),
    );
    launch(originName, origin.entrypoint!, { ...originEnv, ORIGIN_HOST: address.get(originName)! });

    const entrypoint = dockerEntrypoint();
    for (const n of nodeNames) {
      const svc = compose.services[n]!;
      const env = Object.fromEntries(
        Object.entries(svc.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), hostEnv)]),
      );
      const ip = address.get(n)!;
      expect(env.CORAL_ADMIN_TOKEN).toBe(token);
      expect(env.CORAL_FLEET_KEYS).toBe(hostEnv.CORAL_FLEET_KEYS);
      launch(n, [...entrypoint, ...svc.command!], {
        ...env,
        CORAL_HOSTS: hostsEnv,
        CORAL_HOST: ip,
        CORAL_DNS_HOST: ip,
        CORAL_ADMIN_HOST: ip,
        CORAL_DATA_DIR: join(dataRoot, `${n}-data`),
      });
    }

    // The fleet forms: every node is ready and knows the others.
    for (const n of nodeNames) {
      const admin = new AdminClient({ url: `http://${address.get(n)}:8092`, timeoutMs: 2_000 });
      await waitFor(
        async () => {
          const ready = await admin
            .json<{ ready: boolean }>('GET', '/readyz')
            .catch(() => ({ ready: false }));
          if (!ready.ready) return false;
          const routes = await admin.json<{ contacts: unknown[] }>(
            'GET',
            '/v1/dsht/routes?level=0',
          );
          return routes.contacts.length >= nodeNames.length - 1;
        },
        45_000,
        `${n} to join (log: ${join(dataRoot, `${n}.log`)})`,
      );
    }

    // A client resolves the origin's Coralized name through the second node's DNS server.
    const zone = interpolate(
      String(compose.services[nodeNames[0]!]!.environment!.CORAL_ZONE),
      hostEnv,
    );
    const originPort = Number(originEnv.ORIGIN_PORT);
    const coralName = `www.origin.test.${originPort}.${zone}`;
    const second = address.get(nodeNames[1]!)!;
    const ips = await resolveThrough({ ip: second, port: 5353 }, coralName);
    expect([...address.values()]).toContain(ips[0]);
    const expected = objectBody(1, DEFAULT_ORIGIN_OBJECT_BYTES);
    const r1 = await fetchVia({ ip: ips[0]!, port: 8090 }, coralName, '/obj/1');
    expect(r1.status).toBe(200);
    expect(r1.body.equals(expected)).toBe(true);
    const other = [...nodeNames.map((n) => address.get(n)!)].find((ip) => ip !== ips[0])!;
    const r2 = await fetchVia({ ip: other, port: 8090 }, coralName, '/obj/1');
    expect(r2.body.equals(expected)).toBe(true);
    // One of the two went through the other (whichever node is designated for the URL).
    expect([r1.cacheStatus, r2.cacheStatus].some((cs) => /peer/i.test(cs))).toBe(true);

    // The admin API wants the compose token from non-loopback... and every node stops cleanly.
    for (const c of children.slice(1)) expect(await stopProcess(c, 10_000)).toBe(0);
  });
});
