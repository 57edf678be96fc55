/**
 * The dashboard's three charts (uPlot): requests by outcome, bytes by direction and DNS answers
 * by reason, as rates per second over the sample history.
 */
import { byId } from './dom.js';
import { clock, fmtBytes, fmtRate } from './format.js';
import { history, rateData } from './history.js';
import { BYTES, OUTCOMES, type View } from './view.js';

const DNS_COLORS = ['#58a6ff', '#3fb950', '#d29922', '#bc8cff', '#ff7a59', '#39c5cf', '#8391a3'];

const AXIS = {
  stroke: '#8391a3',
  grid: { stroke: '#222c38', width: 1 },
  ticks: { stroke: '#263241', width: 1 },
  font: '11px system-ui, sans-serif',
};

interface Chart {
  plot: uPlot;
  keys: string[];
  el: HTMLElement;
}
const charts: Record<string, Chart> = {};

function chartSize(el: HTMLElement): { width: number; height: number } {
  return { width: Math.max(240, el.clientWidth), height: 200 };
}

function makeChart(
  id: string,
  series: { label: string; color: string }[],
  value: (n: number) => string,
): uPlot {
  const el = byId(id);
  const opts: uPlot.Options = {
    ...chartSize(el),
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [
      { ...AXIS, values: (_u, splits) => splits.map((s) => clock(s * 1000)) },
      { ...AXIS, size: 64, values: (_u, splits) => splits.map((s) => value(s)) },
    ],
    series: [
      {},
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 1.6,
        fill: `${s.color}1f`,
        spanGaps: false,
        points: { show: false },
        value: (_u: uPlot, v: number | null) => (v === null ? '–' : value(v)),
      })),
    ],
  };
  return new uPlot(opts, [[], ...series.map(() => [])], el);
}

export function drawCharts(view: View): void {
  charts.requests ??= {
    plot: makeChart('chart-requests', OUTCOMES, fmtRate),
    keys: OUTCOMES.map((o) => o.key),
    el: byId('chart-requests'),
  };
  charts.requests.plot.setData(rateData(OUTCOMES.map((o) => [`outcome.${o.key}`])));

  charts.bytes ??= {
    plot: makeChart('chart-bytes', BYTES, (n) => `${fmtBytes(n)}`),
    keys: BYTES.map((b) => b.key),
    el: byId('chart-bytes'),
  };
  charts.bytes.plot.setData(rateData(BYTES.map((b) => [b.key])));

  // DNS reasons: one line per reason seen so far; a new reason rebuilds the chart.
  const reasons = [
    ...new Set([
      ...Object.keys(history.series)
        .filter((k) => k.startsWith('dns.'))
        .map((k) => k.slice(4)),
      ...Object.keys(view.totals.dns),
    ]),
  ].sort();
  if (charts.dns && charts.dns.keys.join() !== reasons.join()) {
    charts.dns.plot.destroy();
    delete charts.dns;
  }
  charts.dns ??= {
    plot: makeChart(
      'chart-dns',
      reasons.map((r, i) => ({ label: r, color: DNS_COLORS[i % DNS_COLORS.length]! })),
      fmtRate,
    ),
    keys: reasons,
    el: byId('chart-dns'),
  };
  charts.dns.plot.setData(rateData(reasons.map((r) => [`dns.${r}`])));
}

window.addEventListener('resize', () => {
  for (const c of Object.values(charts)) c.plot.setSize(chartSize(c.el));
});
