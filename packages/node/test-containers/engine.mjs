// The container engine for `npm run test:containers`: install Debian's docker.io and
// docker-compose when missing, start dockerd when it is not running (and stop only a dockerd
// started here), and pick the commands to use: a docker client that can build with BuildKit
// secrets, and Compose v2 (`docker compose`) or v1 (`docker-compose`).
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';

/** Run a command to completion; resolves with its status and output, never rejects. */
export function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
      if (opts.echo) process.stdout.write(c);
    });
    child.stderr.on('data', (c) => {
      stderr += c;
      if (opts.echo) process.stderr.write(c);
    });
    child.on('error', (err) => resolve({ status: 127, stdout, stderr: String(err) }));
    child.on('close', (status) => resolve({ status: status ?? 1, stdout, stderr }));
  });
}

/** Like {@link run}, but throws with the command's output when it fails. */
export async function must(cmd, args, opts = {}) {
  const r = await run(cmd, args, opts);
  if (r.status !== 0) {
    const out = `${r.stdout}${r.stderr}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status}):\n${out}`);
  }
  return r;
}

const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** apt-get, as root or through sudo. */
async function aptInstall(packages, log) {
  const sudo = process.getuid?.() === 0 ? [] : has('sudo') ? ['sudo', '-n'] : null;
  if (!sudo)
    throw new Error(`${packages.join(' ')} missing, and neither root nor sudo to install it`);
  const apt = (args) => {
    const [cmd, ...rest] = [...sudo, 'apt-get', ...args];
    return must(cmd, rest, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  };
  log(`installing ${packages.join(' ')} (apt-get update, apt-get install)`);
  await apt(['update', '-q']);
  await apt(['install', '-y', '-q', '--no-install-recommends', ...packages]);
}

/** docker.io and docker-compose present, installing what is missing. */
export async function ensureInstalled(log) {
  const missing = [];
  if (!has('dockerd') || !has('docker')) missing.push('docker.io');
  if (!has('docker-compose') && (await run('docker', ['compose', 'version'])).status !== 0) {
    missing.push('docker-compose');
  }
  if (missing.length > 0) await aptInstall(missing, log);
}

/**
 * A running engine: the one already there, or a dockerd started here in the background (storage
 * overlay2, cgroupfs; `extraArgs` are added to its command line). `stop()` stops only a dockerd
 * this function started.
 */
export async function ensureDaemon(log, workDir, extraArgs = []) {
  if ((await run('docker', ['info'])).status === 0) {
    return { startedHere: false, stop: async () => undefined };
  }
  const logFile = join(workDir, 'dockerd.log');
  const fd = openSync(logFile, 'a');
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const [cmd, ...args] = [
    ...sudo,
    'dockerd',
    '--storage-driver',
    'overlay2',
    '--exec-opt',
    'native.cgroupdriver=cgroupfs',
    ...extraArgs,
  ];
  log(`starting dockerd (log: ${logFile})`);
  const daemon = spawn(cmd, args, { stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  let exited = false;
  const exitedP = new Promise((r) => daemon.once('exit', () => r((exited = true))));
  const stop = async () => {
    if (exited) return;
    log('stopping the dockerd started here');
    daemon.kill('SIGTERM');
    await Promise.race([exitedP, sleep(30_000)]);
    if (!exited) daemon.kill('SIGKILL');
  };
  for (let waited = 0; waited < 60_000; waited += 500) {
    if (exited) throw new Error(`dockerd exited at start; see ${logFile}`);
    if ((await run('docker', ['info'])).status === 0) return { startedHere: true, stop };
    await sleep(500);
  }
  await stop();
  throw new Error(`dockerd did not answer within 60 s; see ${logFile}`);
}

/**
 * A docker client whose `build` takes `--secret` (BuildKit): `docker buildx build` when the buildx
 * plugin is there, else a client with BuildKit built in (the 20.10 client of Debian's docker.io at
 * /usr/bin/docker: `DOCKER_BUILDKIT=1 docker build` runs the engine's own BuildKit). A newer client
 * without buildx only has the legacy builder, which cannot take secrets.
 */
export async function findBuilder() {
  const clients = [...new Set(['docker', '/usr/bin/docker'])];
  for (const client of clients) {
    if ((await run(client, ['buildx', 'version'])).status === 0) {
      return {
        cmd: client,
        args: ['buildx', 'build', '--load'],
        env: {},
        label: `${client} buildx`,
      };
    }
  }
  for (const client of clients) {
    const env = { ...process.env, DOCKER_BUILDKIT: '1' };
    const help = await run(client, ['build', '--help'], { env });
    if (help.status === 0 && /--secret/.test(help.stdout + help.stderr)) {
      const v = await run(client, ['version', '--format', '{{.Client.Version}}']);
      return {
        cmd: client,
        args: ['build'],
        env: { DOCKER_BUILDKIT: '1' },
        label: `${client} ${v.stdout.trim()} with the engine's BuildKit`,
      };
    }
  }
  throw new Error(
    'no docker client can build with BuildKit secrets (install the buildx plugin, e.g. Debian docker-buildx)',
  );
}

/** `docker compose` (v2) when the plugin is there, else `docker-compose` (v1, e.g. 1.29). */
export async function findCompose() {
  const v2 = await run('docker', ['compose', 'version', '--short']);
  if (v2.status === 0)
    return { cmd: 'docker', pre: ['compose'], label: `docker compose ${v2.stdout.trim()}` };
  const v1 = await run('docker-compose', ['version', '--short']);
  if (v1.status === 0)
    return { cmd: 'docker-compose', pre: [], label: `docker-compose ${v1.stdout.trim()}` };
  throw new Error('neither `docker compose` nor `docker-compose` works');
}
