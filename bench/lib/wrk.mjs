// One wrk run as a child process (pinned with taskset when `cpu` is given), its summary read back
// through a Lua `done` hook as one JSON line, with a CPU window (bench/lib/system.mjs) over the
// middle of the run: from 0.5 s after the start to 0.5 s before the end, while wrk is alive.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuWindow, pinned } from './system.mjs';

const REPORT = `done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('JSON {"requests":%d,"durationS":%f,"bytes":%d,"errors":%d,"non2xx":%d,' ..
    '"p50Ms":%f,"p99Ms":%f}\\n',
    summary.requests, summary.duration / 1e6, summary.bytes, e.connect + e.read + e.write + e.timeout,
    e.status, latency:percentile(50) / 1e3, latency:percentile(99) / 1e3))
end
`;

/** Write wrk's report script into `dir`; returns its path. */
export function wrkScript(dir) {
  const file = join(dir, 'wrk-report.lua');
  writeFileSync(file, REPORT);
  return file;
}

/**
 * Run wrk against `url` for `seconds` (≥ 2). `headers`: extra request headers; `ours`: name → pid
 * or pids whose CPU the window reports (the generator is added as `generator`); `children`: a Set
 * the child is kept in while it runs (for the caller's cleanup). Resolves to wrk's figures plus
 * `rps` and `cpu` (cpuWindow's reading).
 */
export async function wrk({
  script,
  url,
  seconds,
  connections,
  threads,
  headers,
  cpu,
  ours,
  children,
}) {
  const args = [`-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--timeout', '10s'];
  for (const h of headers) args.push('-H', h);
  const [cmd, argv] = pinned(cpu, 'wrk', [...args, '-s', script, url]);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => (out += d));
  const exited = once(child, 'exit');
  await new Promise((r) => setTimeout(r, 500));
  const window = cpuWindow();
  await new Promise((r) => setTimeout(r, Math.max(500, seconds * 1000 - 1000)));
  const usage = window.end({ ...ours, generator: child.pid });
  const [code] = await exited;
  children.delete(child);
  if (code !== 0) throw new Error(`${cmd} ${argv.join(' ')} exited with ${code}`);
  const line = out.split('\n').find((l) => l.startsWith('JSON '));
  if (!line) throw new Error(`no result from wrk: ${out}`);
  const r = JSON.parse(line.slice('JSON '.length));
  return { ...r, rps: r.requests / r.durationS, cpu: usage };
}
