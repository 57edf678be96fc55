/**
 * The top of the dashboard: who the node is and whether it is ready (the header), and the totals
 * (tiles: requests by outcome, offload, bytes, DNS answers).
 */
import { byId, fill, h, tile } from './dom.js';
import { fmtAgo, fmtBytes, fmtInt, fmtPercent, fmtRate, shortId } from './format.js';
import { latestRate } from './history.js';
import { OUTCOMES, type View } from './view.js';

export function renderHeader(view: View): void {
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

export function renderTiles(view: View): void {
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
