/**
 * The dashboard's HTML: the page itself (a skeleton the script fills from `GET /v1/dashboard`) and
 * the login page a browser gets when it is neither on loopback nor holding a session. Nothing
 * inline: scripts and styles come from /dashboard/ (the Content-Security-Policy allows only the
 * node's own assets).
 */

/** Headers of every dashboard answer (pages and assets). */
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Not no-referrer: with it, browsers send `Origin: null` on the login form's POST.
  'referrer-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

const head = (title: string, extra = '') => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="/dashboard/favicon.svg" type="image/svg+xml">
${extra}<link rel="stylesheet" href="/dashboard/app.css">
</head>`;

const tile = (id: string, label: string, cls = '') =>
  `<div class="tile ${cls}"><div class="label">${label}</div>` +
  `<div class="value" id="${id}">–</div><div class="sub" id="${id}-sub">&nbsp;</div></div>`;

const panel = (id: string, title: string, body: string, right = '') =>
  `<section class="panel" id="${id}"><h2>${title}<span class="count" id="${id}-count"></span>` +
  `${right ? `<span class="right">${right}</span>` : ''}</h2>${body}</section>`;

/** The dashboard. `session`: the browser came in with a session cookie (offer to sign out). */
export function dashboardPage(options: { session: boolean }): string {
  const signOut = options.session
    ? '<form class="inline" method="post" action="/logout"><button type="submit">Sign out</button></form>'
    : '';
  return `${head(
    'Coral node',
    '<link rel="stylesheet" href="/dashboard/uplot.css">\n' +
      '<script src="/dashboard/uplot.js" defer></script>\n' +
      '<script type="module" src="/dashboard/app.js"></script>\n',
  )}
<body>
<header class="top">
  <div class="brand"><img src="/dashboard/favicon.svg" alt="">Coral</div>
  <div class="ident" id="ident"><span class="muted">loading…</span></div>
  <div class="status">
    <span id="ready" class="badge">…</span>
    <span><span class="live-dot" id="live"></span> <span id="updated" class="muted">connecting</span></span>
    ${signOut}
  </div>
</header>
<main>
  <section class="tiles">
    ${tile('t-requests', 'Requests')}
    ${tile('t-hit', 'Hits', 'hit')}
    ${tile('t-peer', 'From peers', 'peer')}
    ${tile('t-miss', 'Misses', 'miss')}
    ${tile('t-error', 'Errors', 'error')}
    ${tile('t-offload', 'Origin offload', 'offload')}
    ${tile('t-sent', 'Sent to clients')}
    ${tile('t-peer-bytes', 'Peer bytes in')}
    ${tile('t-origin-bytes', 'Origin bytes in')}
    ${tile('t-dns', 'DNS answers')}
  </section>
  <div class="grid c3">
    ${panel('c-requests', 'Requests / s', '<div class="chart" id="chart-requests"></div>')}
    ${panel('c-bytes', 'Bytes / s', '<div class="chart" id="chart-bytes"></div>')}
    ${panel('c-dns', 'DNS answers / s by reason', '<div class="chart" id="chart-dns"></div>')}
  </div>
  <div class="grid c2 wide-left">
    ${panel('fleet', 'Fleet', '<div class="scroll" id="fleet-body"></div>')}
    ${panel('hot', 'Hottest URLs', '<div class="scroll" id="hot-body"></div>')}
  </div>
  <div class="grid c2">
    ${panel('dns', 'DNS decisions by reason', '<div id="dns-reasons"></div><div class="scroll" id="dns-recent"></div>')}
    ${panel(
      'routes',
      'DSHT routing table',
      '<div class="scroll" id="routes-body"></div>',
      '<span class="tabs" id="route-tabs"></span>',
    )}
  </div>
</main>
<footer>Data: <a href="/v1/dashboard">/v1/dashboard</a> · <a href="/metrics">/metrics</a> · Coral admin API</footer>
</body>
</html>
`;
}

/** The login page: the admin token, once, for a session cookie. */
export function loginPage(options: { message?: string; tokenConfigured: boolean }): string {
  const body = options.tokenConfigured
    ? `<p>This node's admin API wants its token (<code>admin.token</code>) from this address.</p>
  ${options.message ? `<p class="error" id="login-error">${escapeHtml(options.message)}</p>` : ''}
  <form method="post" action="/login">
    <input type="text" name="username" value="admin" autocomplete="username" hidden>
    <label for="token">Admin token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <button type="submit">Sign in</button>
  </form>`
    : `<p class="error" id="login-error">${escapeHtml(
        options.message ??
          'The admin API only answers loopback clients: configure admin.token (CORAL_ADMIN_TOKEN) to open it to this address.',
      )}</p>`;
  return `${head('Coral node: sign in')}
<body>
<div class="login">
  <h1><img src="/dashboard/favicon.svg" alt="">Coral node</h1>
  ${body}
</div>
</body>
</html>
`;
}
