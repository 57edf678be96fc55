/** The dashboard's style sheet (served as /dashboard/app.css) and its icon. */

export const STYLES = `
:root {
  --bg: #0f1419; --panel: #161c24; --panel2: #1c2430; --line: #263241; --text: #d7dee8;
  --muted: #8391a3; --faint: #5b6878; --accent: #ff7a59; --ok: #3fb950; --warn: #d29922;
  --bad: #f85149; --hit: #3fb950; --peer: #58a6ff; --miss: #d29922; --error: #f85149;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace;
  color-scheme: dark;
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--text);
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
a { color: var(--peer); }
.mono, code { font-family: var(--mono); font-size: 12.5px; }
.muted { color: var(--muted); }

header.top { display: flex; align-items: center; gap: 18px; padding: 10px 20px;
  background: var(--panel); border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 5; }
.brand { display: flex; align-items: center; gap: 8px; font-weight: 650; font-size: 16px; }
.brand img { width: 22px; height: 22px; }
.ident { display: flex; flex-wrap: wrap; gap: 6px 16px; color: var(--muted); font-size: 13px; }
.ident b { color: var(--text); font-weight: 500; }
.status { margin-left: auto; display: flex; align-items: center; gap: 12px; font-size: 13px; }
.badge { display: inline-block; padding: 2px 9px; border-radius: 10px; font-size: 12px;
  font-weight: 600; background: var(--panel2); border: 1px solid var(--line); }
.badge.ok { color: var(--ok); border-color: #2a5a35; background: #12261a; }
.badge.bad { color: var(--bad); border-color: #6b2a28; background: #2a1414; }
.badge.warn { color: var(--warn); border-color: #5c4a1c; background: #261f10; }
.live-dot { width: 8px; height: 8px; border-radius: 50%; background: var(--faint); display: inline-block; }
.live-dot.on { background: var(--ok); box-shadow: 0 0 6px var(--ok); }
button, .button { background: var(--panel2); color: var(--text); border: 1px solid var(--line);
  border-radius: 6px; padding: 4px 10px; font: inherit; font-size: 12.5px; cursor: pointer; }
button:hover { border-color: var(--muted); }
form.inline { display: inline; margin: 0; }

main { padding: 16px 20px 28px; display: grid; gap: 16px; max-width: 1680px; margin: 0 auto; }
.tiles { display: grid; grid-template-columns: repeat(5, minmax(0, 1fr)); gap: 12px; }
@media (max-width: 900px) { .tiles { grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); } }
.tile { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.tile .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.tile .value { font-size: 24px; font-weight: 600; font-variant-numeric: tabular-nums; margin-top: 2px; }
.tile .sub { color: var(--muted); font-size: 12px; font-variant-numeric: tabular-nums; }
.tile.hit .value { color: var(--hit); } .tile.peer .value { color: var(--peer); }
.tile.miss .value { color: var(--miss); } .tile.error .value { color: var(--error); }
.tile.offload .value { color: var(--accent); }
.meter { height: 4px; background: var(--panel2); border-radius: 2px; margin-top: 6px; overflow: hidden; }
.meter > span { display: block; height: 100%; background: var(--accent); width: 0; }

.grid { display: grid; gap: 16px; }
.grid.c3 { grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); }
.grid.c2 { grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); }
@media (min-width: 1200px) { .grid.c2.wide-left { grid-template-columns: minmax(0, 11fr) minmax(0, 9fr); } }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px;
  min-width: 0; }
.panel h2 { margin: 0 0 8px; font-size: 13px; font-weight: 600; color: var(--muted);
  text-transform: uppercase; letter-spacing: .05em; display: flex; align-items: baseline; gap: 8px; }
.panel h2 .count { color: var(--faint); font-weight: 500; text-transform: none; letter-spacing: 0; }
.panel h2 .right { margin-left: auto; text-transform: none; letter-spacing: 0; font-weight: 400; }
.chart { min-height: 200px; }
.empty { color: var(--faint); padding: 10px 2px; font-style: italic; }

table { width: 100%; border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th { text-align: left; color: var(--faint); font-weight: 500; font-size: 12px; padding: 4px 8px;
  border-bottom: 1px solid var(--line); white-space: nowrap; }
td { padding: 4px 8px; border-bottom: 1px solid #1d2631; vertical-align: middle; white-space: nowrap; }
tr:last-child td { border-bottom: 0; }
td.num, th.num { text-align: right; }
td.url { max-width: 0; width: 100%; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
tr.self td { background: #1a2230; }
.lvl { display: inline-block; min-width: 24px; text-align: center; padding: 0 5px; margin-right: 3px;
  border-radius: 4px; font-size: 11.5px; font-weight: 600; border: 1px solid var(--line); color: var(--faint); }
.lvl.on { color: #0f1419; border-color: transparent; }
.lvl.l0.on { background: #8391a3; } .lvl.l1.on { background: #58a6ff; } .lvl.l2.on { background: #3fb950; }
.bar { position: relative; height: 6px; background: var(--panel2); border-radius: 3px; min-width: 60px; }
.bar > span { position: absolute; left: 0; top: 0; bottom: 0; border-radius: 3px; background: var(--accent); }
.dot { display: inline-block; width: 8px; height: 8px; border-radius: 50%; margin-right: 6px; }
.dot.ok { background: var(--ok); } .dot.bad { background: var(--bad); } .dot.warn { background: var(--warn); }
.tabs { display: flex; gap: 6px; margin-left: auto; }
.tabs button.on { border-color: var(--accent); color: var(--accent); }
.clusters { display: flex; flex-wrap: wrap; gap: 4px 18px; font-size: 12.5px; margin-bottom: 6px; }
.clusters b { color: var(--text); font-weight: 500; }
.scroll { max-height: 360px; overflow: auto; }
footer { color: var(--faint); font-size: 12px; text-align: center; padding: 0 0 20px; }
footer a { color: var(--muted); }

.uplot { font-family: inherit; }
.u-legend { font-size: 12px; color: var(--muted); }
.u-legend .u-series:first-child { display: none; }
.u-legend .u-series > * { padding: 2px 4px; }
.panel h2.sub { margin-top: 14px; }
.u-legend .u-marker { border-radius: 2px; }

.login { max-width: 380px; margin: 12vh auto; background: var(--panel); border: 1px solid var(--line);
  border-radius: 10px; padding: 26px 28px; }
.login h1 { font-size: 18px; margin: 0 0 6px; display: flex; align-items: center; gap: 8px; }
.login h1 img { width: 24px; height: 24px; }
.login p { color: var(--muted); margin: 6px 0 16px; }
.login label { display: block; font-size: 12px; color: var(--muted); margin-bottom: 4px; }
.login input { width: 100%; padding: 8px 10px; border-radius: 6px; border: 1px solid var(--line);
  background: var(--bg); color: var(--text); font: inherit; font-family: var(--mono); }
.login button { margin-top: 14px; width: 100%; padding: 8px; background: var(--accent); color: #1a0f0a;
  border: 0; font-weight: 650; }
.login .error { color: var(--bad); margin: 0 0 12px; }
`;

/** A small coral branch. */
export const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#1c2430"/>
<path d="M16 29V17M16 17l-6-6M16 17l6-7M10 11V5M10 11l-4-3M22 10V4M22 10l4-3M16 22l-5-2M16 21l6-3"
 stroke="#ff7a59" stroke-width="2.6" stroke-linecap="round" fill="none"/>
</svg>
`;
