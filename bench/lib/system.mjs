// What the benches read about the machine while they measure (Linux /proc; elsewhere every reading
// is null and the bench says so): per-CPU busy and steal time, the CPU time of given processes and
// of everything else, a process's memory (VmRSS and its parts) and open descriptors, and CPU
// pinning with taskset.
import { once } from 'node:events';
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { spawnSync } from 'node:child_process';

/** Clock ticks per second of /proc's CPU counters. */
export const CLK_TCK = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

/** True when processes can be pinned to CPUs here (taskset present, at least two CPUs). */
export function canPin() {
  return (
    os.cpus().length >= 2 &&
    spawnSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' }).status === 0
  );
}

/** `[cmd, args]` that runs `cmd args` on CPU `cpu` (or unpinned when `cpu` is undefined). */
export function pinned(cpu, cmd, args) {
  return cpu === undefined ? [cmd, args] : ['taskset', ['-c', String(cpu), cmd, ...args]];
}

/** Does `cmd` exist on the PATH (it runs, whatever its exit status)? */
export function installed(cmd, args = ['-v']) {
  return spawnSync(cmd, args, { stdio: 'ignore' }).error === undefined;
}

/**
 * CPU ticks of one process, or undefined when it is gone: `own` is utime + stime of all its
 * threads, `reaped` cutime + cstime (the children it has waited for, whatever their lifetime).
 */
export function processTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    return { own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
  } catch {
    return undefined;
  }
}

/** The pids whose parent is `pid` (nginx's workers under its master). */
export function childPids(pid) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** CPU ticks of every process on the machine (to tell how busy the neighbours were). */
function allProcessTicks() {
  const out = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const t = processTicks(name);
    if (t !== undefined) out.set(Number(name), t);
  }
  return out;
}

/** Per-CPU counters from /proc/stat: { total, idle, irq, steal } in ticks, keyed by CPU number. */
function cpuCounters() {
  const out = new Map();
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+) (.*)$/.exec(line);
    if (!m) continue;
    // user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user)
    const t = m[2].trim().split(/\s+/).map(Number);
    const total = t.slice(0, 8).reduce((a, b) => a + b, 0);
    out.set(Number(m[1]), { total, idle: t[3] + t[4], irq: t[5] + t[6], steal: t[7] ?? 0 });
  }
  return out;
}

/**
 * Start a measurement window. `end(ours)` closes it and returns, in % of the window's wall time:
 * per CPU its busy share (not idle, not stolen), the part of it spent in interrupts and softirqs
 * (loopback TCP is processed there, charged to no process) and its steal; per pid in `ours` (name → pid or
 * pids) that process's CPU; and `others`, the CPU of every other process on the machine (other
 * jobs, other helpers: the noisy neighbours a hypervisor's steal does not show).
 */
export function cpuWindow() {
  let t0;
  let procs0;
  try {
    t0 = cpuCounters();
    procs0 = allProcessTicks();
  } catch {
    return { end: () => null };
  }
  const wall0 = performance.now();
  return {
    end(ours) {
      const wallS = (performance.now() - wall0) / 1000;
      const t1 = cpuCounters();
      const procs1 = allProcessTicks();
      const cpus = {};
      for (const [cpu, b] of t1) {
        const a = t0.get(cpu);
        const dt = b.total - a.total;
        if (!a || dt <= 0) continue;
        cpus[cpu] = {
          busyPct: (100 * (dt - (b.idle - a.idle) - (b.steal - a.steal))) / dt,
          irqPct: (100 * (b.irq - a.irq)) / dt,
          stealPct: (100 * (b.steal - a.steal)) / dt,
        };
      }
      const pct = (ticks) => (100 * ticks) / CLK_TCK / wallS;
      const mine = new Set();
      const processes = {};
      for (const [name, pids] of Object.entries(ours)) {
        let ticks = 0;
        for (const pid of [pids].flat()) {
          mine.add(pid);
          // A process started inside the window counts from zero.
          ticks += (procs1.get(pid)?.own ?? 0) - (procs0.get(pid)?.own ?? 0);
        }
        processes[name] = pct(ticks);
      }
      // Everything else: the sum over all other processes of their own and their reaped children's
      // ticks, at the end minus at the start. A process that ends inside the window moves its
      // ticks into its parent's reaped count, so short-lived ones (test workers, compilers) count.
      const sum = (procs) => {
        let t = 0;
        for (const [pid, p] of procs) if (!mine.has(pid)) t += p.own + p.reaped;
        return t;
      };
      return { wallS, cpus, processes, othersPct: pct(sum(procs1) - sum(procs0)) };
    },
  };
}

/** A process's memory from /proc/<pid>/status, in bytes: VmRSS, its anon/file/shmem parts, VmHWM. */
export function processMemory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) * 1024 : null;
    };
    return {
      rss: kb('VmRSS'),
      anon: kb('RssAnon'),
      file: kb('RssFile'),
      shmem: kb('RssShmem'),
      hwm: kb('VmHWM'),
    };
  } catch {
    return null;
  }
}

/** Open file descriptors of a process: the entries of /proc/<pid>/fd (null when it is gone). */
export function openDescriptors(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

/** A process's soft and hard limits on open files, from /proc/<pid>/limits (null when unknown). */
export function descriptorLimits(pid) {
  try {
    const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    const n = (v) => (v === 'unlimited' ? Infinity : Number(v));
    return m ? { soft: n(m[1]), hard: n(m[2]) } : null;
  } catch {
    return null;
  }
}

/**
 * Where a process's resident memory is, from /proc/<pid>/smaps: RSS (bytes) summed by mapping —
 * files by name, anonymous mappings by permissions and size class (V8's heap pages and glibc's
 * arenas are anonymous; a thread's malloc arena is a 64 MiB reservation) — largest first.
 */
export function smapsSummary(pid) {
  const groups = new Map();
  let key;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const size = parseInt(m[2], 16) - parseInt(m[1], 16);
      const name = m[4];
      const cls = size >= 2 ** 26 ? '≥ 64 MiB' : size >= 2 ** 20 ? '1–64 MiB' : '< 1 MiB';
      key = name.startsWith('/') ? name.split('/').pop() : name || `anon ${m[3]} ${cls}`;
      continue;
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r && key) groups.set(key, (groups.get(key) ?? 0) + Number(r[1]) * 1024);
  }
  return [...groups].sort((a, b) => b[1] - a[1]);
}

/** The next IPC message from a child, or an error if it exits first. */
export async function nextMessage(child, what) {
  const ac = new AbortController();
  try {
    const [m] = await Promise.race([
      once(child, 'message', { signal: ac.signal }),
      once(child, 'exit', { signal: ac.signal }).then(([code, signal]) => {
        throw new Error(`${what} exited (${signal ?? `code ${code}`}) before answering`);
      }),
    ]);
    return m;
  } finally {
    ac.abort();
  }
}

/** Median of numbers (NaN for none). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
