/**
 * The README's main command (`npm start`) starts a node that prints where it listens and an example
 * Coralized fetch; running that printed command against a local origin returns the origin's bytes.
 * And an invalid configuration is reported in full with exit code 2, with nothing started.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
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
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
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
