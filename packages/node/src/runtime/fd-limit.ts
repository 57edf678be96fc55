/**
 * The open-file limit (RLIMIT_NOFILE): read it, and raise the soft limit to the hard one at start
 * where the hard limit allows — every client connection, origin connection and cache file is a
 * descriptor, and 1,024 (the usual soft default) is far below what a proxy needs. Node.js has no
 * API for it, so libc's `getrlimit`/`setrlimit` are called through koffi, as `malloc_trim` is
 * (heap-trim.ts). (Node.js itself raises the soft limit when it starts on Linux, so the raise
 * here mostly finds nothing to do; it still matters where Node did not, and the limit read here
 * is what the connection ceiling is computed from.) Linux only; elsewhere, or when the calls
 * fail, the caller assumes the common soft limit and says so.
 */

/** RLIMIT_NOFILE on Linux (x86, x86-64, arm, arm64, riscv, ppc, s390). */
const RLIMIT_NOFILE = 7;
/** rlim_t's RLIM_INFINITY (all ones); a hard limit of "unlimited" is capped at this when raising. */
const UNLIMITED_CAP = 1_048_576;

export interface DescriptorLimits {
  soft: number;
  hard: number;
}

/** The libc calls (injected in tests). */
export interface RlimitCalls {
  get(): DescriptorLimits;
  /** Set the soft limit; throws with errno's message when the kernel refuses. */
  setSoft(soft: number, hard: number): void;
}

export type DescriptorLimitResult =
  | { raised: boolean; before: DescriptorLimits; limits: DescriptorLimits; error?: string }
  | { unavailable: string };

const toLimit = (v: number | bigint): number =>
  typeof v === 'bigint' ? (v > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(v)) : v;

/** libc's getrlimit/setrlimit for RLIMIT_NOFILE, or why they cannot be had here. */
export async function loadRlimit(
  library = 'libc.so.6',
): Promise<{ calls: RlimitCalls } | { unavailable: string }> {
  if (process.platform !== 'linux') return { unavailable: `not Linux (${process.platform})` };
  try {
    const koffi = (await import('koffi')).default;
    const lib = koffi.load(library);
    const rlimit = koffi.struct({ rlim_cur: 'uint64_t', rlim_max: 'uint64_t' });
    const getrlimit = lib.func('getrlimit', 'int', ['int', koffi.out(koffi.pointer(rlimit))]) as (
      r: number,
      out: { rlim_cur?: number | bigint; rlim_max?: number | bigint },
    ) => number;
    const setrlimit = lib.func('setrlimit', 'int', ['int', koffi.pointer(rlimit)]) as (
      r: number,
      v: { rlim_cur: number | bigint; rlim_max: number | bigint },
    ) => number;
    const errno = (): string => `errno ${koffi.errno()}`;
    return {
      calls: {
        get() {
          const out: { rlim_cur?: number | bigint; rlim_max?: number | bigint } = {};
          if (getrlimit(RLIMIT_NOFILE, out) !== 0) throw new Error(`getrlimit: ${errno()}`);
          return { soft: toLimit(out.rlim_cur ?? 0), hard: toLimit(out.rlim_max ?? 0) };
        },
        setSoft(soft, hard) {
          const max = Number.isFinite(hard) ? BigInt(hard) : 0xffff_ffff_ffff_ffffn;
          if (setrlimit(RLIMIT_NOFILE, { rlim_cur: BigInt(soft), rlim_max: max }) !== 0) {
            throw new Error(`setrlimit: ${errno()}`);
          }
        },
      },
    };
  } catch (err) {
    return { unavailable: `getrlimit not usable from ${library}: ${(err as Error).message}` };
  }
}

/**
 * Raise the soft open-file limit to the hard one (an unlimited hard limit: to 1,048,576) and
 * report both before and after. A refusal leaves the limit as it was and is reported in `error`.
 */
export async function raiseDescriptorLimit(
  calls?: RlimitCalls | Promise<{ calls: RlimitCalls } | { unavailable: string }>,
): Promise<DescriptorLimitResult> {
  const loaded = calls && 'get' in calls ? { calls } : await (calls ?? loadRlimit());
  if ('unavailable' in loaded) return loaded;
  const c = loaded.calls;
  let before: DescriptorLimits;
  try {
    before = c.get();
  } catch (err) {
    return { unavailable: (err as Error).message };
  }
  const target = Math.min(before.hard, UNLIMITED_CAP);
  if (before.soft >= target) return { raised: false, before, limits: before };
  try {
    c.setSoft(target, before.hard);
    return { raised: true, before, limits: c.get() };
  } catch (err) {
    return { raised: false, before, limits: before, error: (err as Error).message };
  }
}
