/**
 * The dashboard page's script: polls `GET /v1/dashboard` (the first answer carries the node's
 * whole sample history, later ones only the samples after the last one seen), draws the rates
 * with uPlot and fills the tiles and tables. Every piece of text from the node goes in through
 * `textContent`, never as HTML: URLs and DNS names are chosen by strangers.
 */
import {
  fmtAgo,
  fmtBytes,
  fmtInt,
  fmtPercent,
  fmtRate,
  rates,
  shortId,
  sumColumns,
} from './format.js';
import type { DashboardView } from '../data.js';

interface DnsDecision {
  at: number;
  client: string;
  name: string;
  rcode: string;
  method: string;
  detail: string;
  nodes: string[];
}

type View = Omit<DashboardView, 'dnsRecent'> & { dnsRecent: DnsDecision[] };

const OUTCOMES = [
  { key: 'hit', label: 'hit', color: '#3fb950' },
  { key: 'peer', label: 'peer', color: '#58a6ff' },
  { key: 'miss', label: 'miss', color: '#d29922' },
  { key: 'error', label: 'error', color: '#f85149' },
];
const BYTES = [
  { key: 'sent.client', label: 'to clients', color: '#ff7a59' },
  { key: 'received.peer', label: 'from peers', color: '#58a6ff' },
  { key: 'received.origin', label: 'from origin', color: '#d29922' },
];
const DNS_COLORS = ['#58a6ff', '#3fb950', '#d29922', '#bc8cff', '#ff7a59', '#39c5cf', '#8391a3'];

// ---- DOM helpers ------------------------------------------------------------------------------

type Child = Node | string | number | null | undefined | false;

function h(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'number' ? String(c) : c);
  }
  return el;
}

function byId(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} missing`);
  return el;
}

function fill(id: string, ...children: Child[]): void {
  byId(id).replaceChildren(
    ...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false),
  );
}

/** A tile: its shown value, the exact number behind it (data-value) and a line under it. */
function tile(id: string, value: number | null, shown: string, sub: string): void {
  const el = byId(id);
  el.textContent = shown;
  el.dataset.value = value === null ? '' : String(value);
  byId(`${id}-sub`).textContent = sub || '\u00a0';
}

function bar(share: number): HTMLElement {
  const fillEl = h('span');
  fillEl.style.width = `${Math.max(0, Math.min(1, share)) * 100}%`;
  return h('div', { class: 'bar' }, fillEl);
}

function table(head: (string | [string, string])[], rows: HTMLElement[]): HTMLElement {
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...head.map((c) => (Array.isArray(c) ? h('th', { class: c[1] }, c[0]) : h('th', {}, c))),
      ),
    ),
    h('tbody', {}, ...rows),
  );
}

// ---- history and charts -------------------------------------------------------------------------

const history: { t: number[]; series: Record<string, (number | null)[]> } = { t: [], series: {} };
let lastT: number | undefined;

function merge(part: View['history'], keep: number): void {
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
function col(name: string): (number | null)[] {
  const c = history.series[name];
  if (!c) return new Array<number | null>(history.t.length).fill(0);
  const first = c.findIndex((v) => v !== null);
  return first <= 0 ? c : [...new Array<number>(first).fill(0), ...c.slice(first)];
}

/** 24-hour local time, HH:MM:SS. */
function clock(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()]
    .map((n) => String(n).padStart(2, '0'))
    .join(':');
}

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

/** x in seconds (uPlot's time scale), rates per second for each key's column. */
function rateData(keys: string[][]): uPlot.AlignedData {
  const x = history.t.map((t) => t / 1000);
  const ys = keys.map((group) =>
    sumColumns(
      group.map((k) => rates(history.t, col(k))),
      history.t.length,
    ),
  );
  return [x, ...ys] as uPlot.AlignedData;
}

function drawCharts(view: View): void {
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

// ---- panels -------------------------------------------------------------------------------------

/** The latest per-second rate of a set of series (over the last two samples). */
function latestRate(keys: string[]): number | null {
  const n = history.t.length;
  if (n < 2) return null;
  const r = sumColumns(
    keys.map((k) => rates(history.t.slice(-2), col(k).slice(-2))),
    2,
  );
  return r[1] ?? null;
}

function renderHeader(view: View): void {
  const n = view.node;
  const s = n.services;
  const part = (label: string, value: string, title?: string) =>
    h('span', title ? { title } : {}, `${label} `, h('b', {}, value));
  fill(
    'ident',
    part('node', shortId(n.nodeId), n.nodeId),
    part('address', n.advertiseIp),
    s.proxy ? part('proxy', `:${s.proxy.port}`) : null,
    s.dns ? part('dns', `:${s.dns.port}`) : null,
    s.dsht ? part('dsht', `:${s.dsht.port}`) : null,
    part('zone', n.zone),
    n.region ? part('region', n.region) : null,
    part('version', n.version),
    part('up', fmtAgo(n.uptimeSeconds * 1000)),
  );
  const ready = byId('ready');
  const failing = Object.entries(view.readiness.checks)
    .filter(([, ok]) => !ok)
    .map(([k]) => k);
  ready.textContent = view.readiness.ready ? 'ready' : `not ready: ${failing.join(', ')}`;
  ready.className = `badge ${view.readiness.ready ? 'ok' : 'bad'}`;
  document.title = `Coral ${shortId(n.nodeId)} · ${n.advertiseIp}`;
}

function renderTiles(view: View): void {
  const t = view.totals;
  const o = (k: string) => t.outcomes[k] ?? 0;
  const total = OUTCOMES.reduce((a, x) => a + o(x.key), 0);
  const rate = latestRate(OUTCOMES.map((x) => `outcome.${x.key}`));
  tile('t-requests', total, fmtInt(total), rate === null ? '' : `${fmtRate(rate)}/s now`);
  for (const x of OUTCOMES) {
    const share = total > 0 ? o(x.key) / total : null;
    tile(
      `t-${x.key}`,
      o(x.key),
      fmtInt(o(x.key)),
      share === null ? '' : `${fmtPercent(share)} of requests`,
    );
  }
  tile(
    't-offload',
    t.offload,
    fmtPercent(t.offload),
    t.offload === null ? 'no bytes sent yet' : 'of bytes sent not from origin',
  );
  const b = t.bytes;
  tile(
    't-sent',
    b.toClients,
    fmtBytes(b.toClients),
    `${fmtInt(b.toClients)} B · peers ${fmtBytes(b.toPeers)}`,
  );
  tile('t-peer-bytes', b.fromPeers, fmtBytes(b.fromPeers), `${fmtInt(b.fromPeers)} B`);
  tile('t-origin-bytes', b.fromOrigin, fmtBytes(b.fromOrigin), `${fmtInt(b.fromOrigin)} B`);
  const dnsTotal = Object.values(t.dns).reduce((a, x) => a + x, 0);
  const top = Object.entries(t.dns).sort((a, c) => c[1] - a[1])[0];
  tile('t-dns', dnsTotal, fmtInt(dnsTotal), top && top[1] > 0 ? `most by ${top[0]}` : '');
}

function levelChips(levels: number[], count: number, title: (l: number) => string): HTMLElement {
  return h(
    'span',
    {},
    ...Array.from({ length: count }, (_, l) =>
      h('span', { class: `lvl l${l}${levels.includes(l) ? ' on' : ''}`, title: title(l) }, `L${l}`),
    ),
  );
}

function renderFleet(view: View): void {
  const f = view.fleet;
  const levels = f.routes.length;
  const clusterOf = (l: number) => f.self.clusters.find((c) => c.level === l);
  const clusterTitle = (l: number) => {
    const c = clusterOf(l);
    if (l === 0) return 'level 0: the whole fleet';
    return c?.clusterId
      ? `level ${l}: cluster ${c.clusterId.slice(0, 8)} (RTT < ${c.thresholdMs ?? '?'} ms, ~${c.size ?? '?'} nodes)`
      : `level ${l}`;
  };
  const self = f.self;
  // The region column only when some node has one.
  const regions = self.region !== null || f.members.some((m) => m.region !== null);
  const row = (
    attrs: Record<string, string>,
    id: string,
    ip: string,
    port: number,
    http: number | null,
    dns: number | null,
    region: string | null,
    rest: HTMLElement[],
  ) =>
    h(
      'tr',
      { ...attrs, 'data-node': id },
      h('td', { class: 'mono', title: id }, shortId(id)),
      h('td', { class: 'mono', title: `DSHT ${ip}:${port}` }, ip),
      h(
        'td',
        { class: 'num muted', title: 'DSHT · proxy · DNS ports' },
        [port, http ?? '–', dns ?? '–'].join(' · '),
      ),
      regions ? h('td', {}, region ?? '') : null,
      ...rest,
    );
  const rows = [
    row(
      { class: 'self' },
      self.nodeId,
      self.ip,
      self.port,
      self.httpPort,
      self.dnsPort,
      self.region,
      [
        h('td', {}, levelChips([...Array(levels).keys()], levels, clusterTitle)),
        h('td', { class: 'num' }, '–'),
        h('td', { class: 'num' }, '–'),
        h('td', {}, h('span', { class: 'dot ok' }), 'this node'),
      ],
    ),
    ...f.members.map((m) =>
      row({}, m.nodeId, m.ip, m.port, m.httpPort, m.dnsPort, m.region, [
        h(
          'td',
          { 'data-levels': m.levels.join(',') },
          levelChips(m.levels, levels, (l) =>
            m.levels.includes(l)
              ? `shares ${clusterTitle(l)}`
              : `not in this node's level-${l} cluster`,
          ),
        ),
        h('td', { class: 'num' }, m.rttMs === null ? '–' : `${m.rttMs.toFixed(1)} ms`),
        h('td', { class: 'num' }, m.lastHeardMs === null ? '–' : `${fmtAgo(m.lastHeardMs)} ago`),
        h(
          'td',
          {},
          h('span', { class: `dot ${m.live ? 'ok' : m.failures > 0 ? 'bad' : 'warn'}` }),
          m.live
            ? 'live'
            : m.failures > 0
              ? `${m.failures} failed RPC${m.failures > 1 ? 's' : ''}`
              : 'not live',
        ),
      ]),
    ),
  ];
  byId('fleet-count').textContent = `${f.members.length + 1} nodes`;
  const clusters = f.self.clusters
    .filter((c) => c.level > 0)
    .map((c) =>
      h(
        'span',
        { class: 'muted' },
        `L${c.level} `,
        h('b', { class: 'mono' }, c.clusterId ? c.clusterId.slice(0, 8) : '–'),
        ` · ${c.members ?? 0} peers · RTT < ${c.thresholdMs ?? '?'} ms`,
      ),
    );
  fill(
    'fleet-body',
    h('div', { class: 'clusters' }, ...clusters),
    table(
      [
        'Node',
        'Address',
        ['Ports', 'num'],
        ...(regions ? ['Region'] : []),
        'Cluster levels',
        ['RTT', 'num'],
        ['Heard', 'num'],
        'State',
      ],
      rows,
    ),
  );
}

function renderHot(view: View): void {
  const hot = view.hotUrls;
  byId('hot-count').textContent = `of ${fmtInt(hot.total)} requests`;
  if (hot.items.length === 0) {
    fill('hot-body', h('div', { class: 'empty' }, 'No client requests yet.'));
    return;
  }
  const max = hot.items[0]!.count;
  fill(
    'hot-body',
    table(
      [['#', 'num'], 'URL', ['Requests', 'num'], ['Share', 'num'], ''],
      hot.items.map((x, i) =>
        h(
          'tr',
          {},
          h('td', { class: 'num muted' }, i + 1),
          h('td', { class: 'url mono', title: x.url }, x.url),
          h(
            'td',
            {
              class: 'num',
              title: x.error > 0 ? `over-estimated by at most ${fmtInt(x.error)}` : 'exact',
            },
            x.error > 0 ? `≤ ${fmtInt(x.count)}` : fmtInt(x.count),
          ),
          h('td', { class: 'num' }, hot.total > 0 ? fmtPercent(x.count / hot.total) : '–'),
          h('td', {}, bar(max > 0 ? x.count / max : 0)),
        ),
      ),
    ),
  );
}

function renderDns(view: View): void {
  const entries = Object.entries(view.totals.dns).sort((a, b) => b[1] - a[1]);
  const total = entries.reduce((a, [, n]) => a + n, 0);
  byId('dns-count').textContent = `${fmtInt(total)} answers`;
  fill(
    'dns-reasons',
    entries.length === 0
      ? h('div', { class: 'empty' }, 'No DNS answers yet.')
      : table(
          ['Reason', ['Answers', 'num'], ['Share', 'num'], ''],
          entries.map(([reason, n]) =>
            h(
              'tr',
              { 'data-reason': reason },
              h('td', { class: 'mono' }, reason),
              h('td', { class: 'num', 'data-value': String(n) }, fmtInt(n)),
              h('td', { class: 'num' }, fmtPercent(total > 0 ? n / total : null)),
              h('td', {}, bar(total > 0 ? n / total : 0)),
            ),
          ),
        ),
  );
  const recent = view.dnsRecent;
  fill(
    'dns-recent',
    recent.length === 0
      ? null
      : h(
          'div',
          {},
          h('h2', { class: 'sub' }, 'Recent answers'),
          table(
            ['Age', 'Resolver', 'Name', 'Reason', 'Answer'],
            recent.map((d) =>
              h(
                'tr',
                {},
                h('td', { class: 'num muted' }, fmtAgo(view.now - d.at)),
                h('td', { class: 'mono' }, d.client),
                h('td', { class: 'url mono', title: d.name }, d.name),
                h('td', { class: 'mono', title: d.detail }, d.method),
                h(
                  'td',
                  { class: 'mono' },
                  d.nodes.length ? d.nodes.map(shortId).join(' ') : d.rcode,
                ),
              ),
            ),
          ),
        ),
  );
}

let routeLevel = 0;

function renderRoutes(view: View): void {
  const routes = view.fleet.routes;
  if (routeLevel >= routes.length) routeLevel = 0;
  fill(
    'route-tabs',
    ...routes.map((r) => {
      const b = h(
        'button',
        { type: 'button', class: r.level === routeLevel ? 'on' : '' },
        `L${r.level} · ${r.contacts.length}`,
      );
      b.addEventListener('click', () => {
        routeLevel = r.level;
        renderRoutes(view);
      });
      return b;
    }),
  );
  const level = routes[routeLevel];
  byId('routes-count').textContent =
    `${routes.reduce((a, r) => a + r.contacts.length, 0)} contacts`;
  if (!level || level.contacts.length === 0) {
    fill('routes-body', h('div', { class: 'empty' }, `No contacts at level ${routeLevel}.`));
    return;
  }
  fill(
    'routes-body',
    table(
      [['Bucket', 'num'], 'Node id', 'Address', ['Heard', 'num'], ['Failures', 'num']],
      level.contacts.map((c) =>
        h(
          'tr',
          {},
          h('td', { class: 'num' }, c.bucket),
          h('td', { class: 'mono', title: c.nodeId }, c.nodeId),
          h('td', { class: 'mono' }, `${c.ip}:${c.port}`),
          h('td', { class: 'num' }, c.lastHeardMs === null ? '–' : `${fmtAgo(c.lastHeardMs)} ago`),
          h('td', { class: 'num' }, c.failures),
        ),
      ),
    ),
  );
}

// ---- polling ------------------------------------------------------------------------------------

function setLive(ok: boolean, text: string): void {
  byId('live').className = `live-dot${ok ? ' on' : ''}`;
  byId('updated').textContent = text;
}

async function poll(): Promise<number> {
  const url = lastT === undefined ? '/v1/dashboard' : `/v1/dashboard?since=${lastT}`;
  const res = await fetch(url, {
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { accept: 'application/json' },
  });
  if (res.status === 401 || res.status === 403) {
    window.location.assign('/login');
    return 60_000;
  }
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const view = (await res.json()) as View;
  merge(view.history, view.samples);
  renderHeader(view);
  renderTiles(view);
  drawCharts(view);
  renderFleet(view);
  renderHot(view);
  renderDns(view);
  renderRoutes(view);
  document.body.dataset.now = String(view.now);
  setLive(true, `updated ${clock(view.now)}`);
  return Math.max(1_000, view.sampleIntervalMs);
}

async function loop(): Promise<void> {
  let next = 2_000;
  try {
    next = await poll();
  } catch (err) {
    setLive(false, `disconnected (${err instanceof Error ? err.message : String(err)})`);
  }
  setTimeout(() => void loop(), next);
}

void loop();
