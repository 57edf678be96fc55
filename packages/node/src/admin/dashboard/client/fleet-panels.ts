/**
 * The dashboard's fleet panels: this node and the members it knows with the cluster levels they
 * share (the fleet table), and its routing tables, one tab per level.
 */
import { byId, fill, h, table } from './dom.js';
import { fmtAgo, shortId } from './format.js';
import type { View } from './view.js';

function levelChips(levels: number[], count: number, title: (l: number) => string): HTMLElement {
  return h(
    'span',
    {},
    ...Array.from({ length: count }, (_, l) =>
      h('span', { class: `lvl l${l}${levels.includes(l) ? ' on' : ''}`, title: title(l) }, `L${l}`),
    ),
  );
}

export function renderFleet(view: View): void {
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

let routeLevel = 0;

export function renderRoutes(view: View): void {
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
