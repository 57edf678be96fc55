/**
 * The README's main command (`npm start`) starts a node that prints where it listens and an example
 * Coralized fetch; running that printed command against a local origin returns the origin's bytes.
 * And an invalid configuration is reported in full with exit code 2, with nothing started.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/cli/client.js';
import { CLI_PATH, SampleOrigin, stopProcess } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const run = promisify(execFile);
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 4 });

afterAll(() => origin.close());

describe('npm start', () => {
  it('starts a node whose printed example fetch returns the origin bytes', async () => {
    const { port } = await origin.listen();
    const ip = `127.0.${randomSubnet()}.31`;
    const child = spawn('npm', ['start'], {
      cwd: root,
      detached: true,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        CORAL_HOST: ip,
        CORAL_DNS_HOST: ip,
        CORAL_ADMIN_HOST: ip,
        CORAL_DATA_DIR: join(tmpDir('start'), 'data'),
        CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
        CORAL_HOSTS: 'www.origin.test=127.0.0.1',
        CORAL_EXAMPLE_ORIGIN: `http://www.origin.test:${port}/obj/2`,
        CORAL_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    try {
      const line = await waitFor(
        () => out.split('\n').find((l) => l.trim().startsWith("curl -H 'Host:")),
        60_000,
        'the example fetch to be printed',
      );
      expect(out).toMatch(new RegExp(`proxy\\s+http\\s+${ip.replace(/\./g, '\\.')}:8090`));
      expect(out).toMatch(/dns\s+udp\+tcp\s+\S+:5353\s+zone nyud\.net/);
      expect(out).toMatch(/admin\s+http\s+\S+:8092/);
      const curl = await run('sh', ['-c', `${line.trim()} -sS`], {
        encoding: 'buffer',
        maxBuffer: 1 << 24,
      });
      expect(Buffer.from(curl.stdout).equals(origin.body(2))).toBe(true);
      const resolveLine = out.split('\n').find((l) => l.trim().startsWith('curl --resolve'))!;
      const viaResolve = await run('sh', ['-c', `${resolveLine.trim()} -sS`], {
        encoding: 'buffer',
      });
      expect(Buffer.from(viaResolve.stdout).equals(origin.body(2))).toBe(true);
      expect(origin.counts.get('/obj/2')).toBe(1);
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
      await stopProcess(child, 10_000);
    }
  });
});

describe('coral-node start with an invalid configuration', () => {
  it('reports every problem at once and exits with code 2, starting nothing', async () => {
    const dataDir = join(tmpDir('badcfg'), 'never-created');
    const result = await run(process.execPath, [CLI_PATH, 'start'], {
      env: {
        CORAL_DATA_DIR: dataDir,
        CORAL_DNS_PORT: 'fifty',
        CORAL_PROXY_PORT: '70000',
        CORAL_ZONE: 'not a zone',
        CORAL_TYPO: '1',
      },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/invalid configuration \(4 problems\)/);
    for (const path of ['env CORAL_DNS_PORT', 'proxy.port', 'zone', 'env CORAL_TYPO']) {
      expect(result.stderr).toContain(`- ${path}:`);
    }
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('coral-node start with an advertise address peers cannot use', () => {
  const start = (env: Record<string, string>) =>
    run(process.execPath, [CLI_PATH, 'start'], {
      env: { PATH: process.env.PATH ?? '', CORAL_DATA_DIR: join(tmpDir('adv'), 'never'), ...env },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );

  it('refuses the wildcard as a configuration error (exit 2)', async () => {
    const r = await start({ CORAL_ADVERTISE: '0.0.0.0' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/- advertise: must be an address peers can reach, not the wildcard/);
  });

  it('reports a name that does not resolve with every other problem (exit 2)', async () => {
    // .invalid never resolves (RFC 6761).
    const r = await start({
      CORAL_ADVERTISE: 'ghost.invalid',
      CORAL_BOOTSTRAP: 'node1',
      CORAL_DNS_PORT: 'fifty',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/invalid configuration \(3 problems\)/);
    expect(r.stderr).toMatch(/- advertise: "ghost\.invalid" does not resolve \(ENOTFOUND/);
    // A bootstrap entry without a port is reported once.
    expect(r.stderr.match(/bootstrap\.0/g)).toHaveLength(1);
    expect(r.stderr).toContain(
      '- bootstrap.0: "node1" has no port: write host:port, e.g. node1:8091',
    );
    expect(r.stderr).not.toMatch(/getaddrinfo/);
  });
});

describe('a data directory in use', () => {
  it('makes a second node say that another node (and which pid) holds it', async () => {
    const subnet = randomSubnet();
    const dataDir = join(tmpDir('locked'), 'data');
    const env = (ip: string) => ({
      PATH: process.env.PATH ?? '',
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_DATA_DIR: dataDir,
      CORAL_LOG_LEVEL: 'warn',
    });
    const first = spawn(process.execPath, [CLI_PATH, 'start'], {
      env: env(`127.0.${subnet}.41`),
      stdio: 'ignore',
    });
    try {
      const admin = new AdminClient({ url: `http://127.0.${subnet}.41:8092`, timeoutMs: 1_000 });
      await waitFor(
        () =>
          admin.json<{ ready: boolean }>('GET', '/readyz').then(
            (r) => r.ready,
            () => false,
          ),
        30_000,
        'the first node to be ready',
      );
      const second = await run(process.execPath, [CLI_PATH, 'start'], {
        env: env(`127.0.${subnet}.42`),
      }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => err,
      );
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(
        `CORAL_ERR_DATA_DIR_LOCKED: data directory ${dataDir} is in use by another node`,
      );
      expect(second.stderr).toContain(`${join(dataDir, 'dsht', 'LOCK')} is locked`);
      // Linux tells who holds the lock.
      if (existsSync('/proc/locks')) expect(second.stderr).toContain(`(pid ${first.pid})`);
    } finally {
      first.kill('SIGTERM');
      await stopProcess(first, 10_000);
    }
  });
});

describe('the coral-node command', () => {
  it('is linked by npm ci, so npx finds it in the repository, and prints its version', async () => {
    const { version } = JSON.parse(
      readFileSync(join(root, 'packages/node/package.json'), 'utf8'),
    ) as { version: string };
    const r = await run('npx', ['coral-node', '--version'], { cwd: root });
    expect(r.stdout).toBe(`coral-node ${version}\n`);
    const short = await run(join(root, 'node_modules/.bin/coral-node'), ['-V'], { cwd: root });
    expect(short.stdout).toBe(`coral-node ${version}\n`);
  });
});
