/** Number and time formats of the dashboard, and per-second rates from counter samples. Pure. */

const INT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** 1234567 → "1,234,567". */
export function fmtInt(n: number): string {
  return INT.format(n);
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** Bytes in binary units: 512 → "512 B", 1536 → "1.50 KiB", 10 MiB → "10.0 MiB". */
export function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return '–';
  let v = Math.abs(n);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  const sign = n < 0 ? '-' : '';
  if (u === 0) return `${sign}${Math.round(v)} B`;
  return `${sign}${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${UNITS[u]}`;
}

/** A rate with a sensible number of digits: 0 → "0", 0.25 → "0.25", 12.34 → "12.3". */
export function fmtRate(n: number): string {
  if (!Number.isFinite(n)) return '–';
  const a = Math.abs(n);
  if (a === 0) return '0';
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

/** A share in [0, 1] as a percentage: 0.934 → "93.4%". */
export function fmtPercent(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  return `${(x * 100).toFixed(x >= 0.9995 || x === 0 ? 0 : 1)}%`;
}

/** A duration in ms, short: 850 → "0.9 s", 42000 → "42 s", 3.6e6 → "1 h 0 min". */
export function fmtAgo(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '–';
  const s = ms / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  const min = Math.floor(s / 60);
  if (min < 120) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${min % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** The first 8 hex digits of a node id. */
export function shortId(id: string): string {
  return id.slice(0, 8);
}

/**
 * Per-second rates between neighbouring samples of a cumulative counter: `out[i]` is the rate
 * over (t[i-1], t[i]]; `null` for the first sample, a missing value or a counter that went back
 * (the node restarted).
 */
export function rates(t: readonly number[], v: readonly (number | null)[]): (number | null)[] {
  return t.map((ti, i) => {
    if (i === 0) return null;
    const a = v[i - 1];
    const b = v[i];
    const dt = (ti - t[i - 1]!) / 1000;
    if (a === null || a === undefined || b === null || b === undefined || !(dt > 0) || b < a) {
      return null;
    }
    return (b - a) / dt;
  });
}

/** Element-wise sum of columns (null where every column is null). */
export function sumColumns(
  columns: readonly (readonly (number | null)[])[],
  length: number,
): (number | null)[] {
  return Array.from({ length }, (_, i) => {
    let sum: number | null = null;
    for (const c of columns) {
      const x = c[i];
      if (x !== null && x !== undefined) sum = (sum ?? 0) + x;
    }
    return sum;
  });
}

/** 24-hour local time, HH:MM:SS. */
export function clock(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()]
    .map((n) => String(n).padStart(2, '0'))
    .join(':');
}
