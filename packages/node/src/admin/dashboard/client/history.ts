/**
 * The node's sample history as the page keeps it: the first answer carries the whole history,
 * later ones only the samples after the last one seen, merged here and cut to the node's length.
 */
import { rates, sumColumns } from './format.js';
import type { View } from './view.js';

export const history: { t: number[]; series: Record<string, (number | null)[]> } = {
  t: [],
  series: {},
};
let lastT: number | undefined;

/** The time of the last sample seen (the next poll asks for what came after it). */
export function lastSampleTime(): number | undefined {
  return lastT;
}

export function merge(part: View['history'], keep: number): void {
  const n = history.t.length;
  for (const name of Object.keys(part.series)) {
    history.series[name] ??= new Array<number | null>(n).fill(null);
  }
  for (const [name, col] of Object.entries(history.series)) {
    const add = part.series[name] ?? new Array<number | null>(part.t.length).fill(null);
    col.push(...add);
  }
  history.t.push(...part.t);
  if (part.t.length > 0) lastT = part.t[part.t.length - 1];
  const drop = history.t.length - keep;
  if (drop > 0) {
    history.t.splice(0, drop);
    for (const col of Object.values(history.series)) col.splice(0, drop);
  }
}

/**
 * A counter's column. Before its first value the counter did not exist yet (a labelled counter
 * appears at its first increment), which is 0, not unknown: the first answers then show as a rise.
 */
export function col(name: string): (number | null)[] {
  const c = history.series[name];
  if (!c) return new Array<number | null>(history.t.length).fill(0);
  const first = c.findIndex((v) => v !== null);
  return first <= 0 ? c : [...new Array<number>(first).fill(0), ...c.slice(first)];
}

/** The latest per-second rate of a set of series (over the last two samples). */
export function latestRate(keys: string[]): number | null {
  const n = history.t.length;
  if (n < 2) return null;
  const r = sumColumns(
    keys.map((k) => rates(history.t.slice(-2), col(k).slice(-2))),
    2,
  );
  return r[1] ?? null;
}

/** x in seconds (uPlot's time scale), rates per second for each key's column. */
export function rateData(keys: string[][]): uPlot.AlignedData {
  const x = history.t.map((t) => t / 1000);
  const ys = keys.map((group) =>
    sumColumns(
      group.map((k) => rates(history.t, col(k))),
      history.t.length,
    ),
  );
  return [x, ...ys] as uPlot.AlignedData;
}
