/**
 * The dashboard page's script: polls `GET /v1/dashboard` (the first answer carries the node's
 * whole sample history, later ones only the samples after the last one seen), draws the rates
 * with uPlot (charts.ts) and fills the header and tiles (summary.ts), the fleet panels
 * (fleet-panels.ts) and the traffic panels (traffic-panels.ts). Every piece of text from the node
 * goes in through `textContent`, never as HTML (dom.ts): URLs and DNS names are chosen by
 * strangers.
 */
import { drawCharts } from './charts.js';
import { byId } from './dom.js';
import { renderFleet, renderRoutes } from './fleet-panels.js';
import { clock } from './format.js';
import { lastSampleTime, merge } from './history.js';
import { renderHeader, renderTiles } from './summary.js';
import { renderDns, renderHot } from './traffic-panels.js';
import type { View } from './view.js';

function setLive(ok: boolean, text: string): void {
  byId('live').className = `live-dot${ok ? ' on' : ''}`;
  byId('updated').textContent = text;
}

async function poll(): Promise<number> {
  const lastT = lastSampleTime();
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
