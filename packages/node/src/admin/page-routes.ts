/**
 * The admin API's browser side (docs/admin-api.md, "Dashboard"): the dashboard page, signing in
 * and out, the page's assets and its data.
 *
 *   GET  /                      the dashboard, or the login page for a browser that may not read
 *                               the API (`?token=` right: a session cookie, and the URL without it)
 *   GET  /login, POST /login    the login form; its `token` gives a session cookie
 *   POST /logout                the session cookie cleared
 *   GET  /dashboard/<asset>     the page's script and styles (no data: no session needed)
 *   GET  /v1/dashboard[?since=] the page's data (samples since a time in ms)
 */
import { AdminAuthError, AdminRequestError } from '../errors.js';
import type { AdminAccess, AccessGrant } from './access.js';
import { asset } from './dashboard/assets.js';
import type { DashboardData } from './dashboard/data.js';
import { PAGE_SECURITY_HEADERS, dashboardPage, loginPage } from './dashboard/page.js';
import { header, json, type AdminRequest, type AdminResponse, type AdminRoute } from './http.js';
import { clearCookie } from './session.js';

export function pageRoutes(
  access: AdminAccess,
  dashboard: DashboardData | undefined,
): AdminRoute[] {
  const hasToken = () => access.sessions !== undefined;
  return [
    ['GET', /^\/$/, async (req, url) => page(access, req, url)],
    ['GET', /^\/login$/, async () => html(200, loginPage({ tokenConfigured: hasToken() }))],
    ['POST', /^\/login$/, async (req) => login(access, req)],
    [
      'POST',
      /^\/logout$/,
      async () => redirect('/login', { 'set-cookie': clearCookie(access.cookieName) }),
    ],
    ['GET', /^\/dashboard\/([a-z0-9.-]+)$/, async (req, _u, [name]) => assetOf(req, name!)],
    [
      'GET',
      /^\/v1\/dashboard$/,
      async (_r, url) => {
        if (!dashboard) {
          throw new AdminRequestError('CORAL_ERR_ADMIN_UNAVAILABLE', 'metrics are not enabled');
        }
        const raw = url.searchParams.get('since');
        const since = raw === null || raw === '' ? undefined : Number(raw);
        if (since !== undefined && !Number.isFinite(since)) {
          throw new AdminRequestError(
            'CORAL_ERR_ADMIN_BAD_REQUEST',
            `since must be a time in ms, got "${raw}"`,
          );
        }
        return json(200, await dashboard.view(since), 0);
      },
    ],
  ];
}

/**
 * `/`: the dashboard for whoever may read the API; a browser that may not gets the login page
 * (or, with `?token=` right, a session cookie and a redirect that drops the token from the URL).
 */
function page(access: AdminAccess, req: AdminRequest, url: URL): AdminResponse {
  const tokenConfigured = access.sessions !== undefined;
  const given = url.searchParams.get('token');
  if (given !== null) {
    if (!access.sessions) return html(403, loginPage({ tokenConfigured: false }));
    if (!access.tokenMatches(given)) {
      return html(401, loginPage({ tokenConfigured: true, message: 'Wrong token.' }));
    }
    return redirect('/', { 'set-cookie': access.sessions.setCookie(access.cookieName) });
  }
  let grant: AccessGrant;
  try {
    grant = access.authorize(req);
  } catch (err) {
    if (!(err instanceof AdminAuthError)) throw err;
    return html(
      err.statusCode,
      loginPage({
        tokenConfigured,
        ...(err.statusCode === 403 ? { message: err.message } : {}),
      }),
    );
  }
  return html(200, dashboardPage({ session: grant === 'session' }));
}

/** `POST /login` with the form's `token`: a session cookie and back to the dashboard. */
function login(access: AdminAccess, req: AdminRequest): AdminResponse {
  if (!access.sessions) return html(403, loginPage({ tokenConfigured: false }));
  const type = header(req.headers, 'content-type') ?? '';
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
    throw new AdminRequestError(
      'CORAL_ERR_ADMIN_UNSUPPORTED_MEDIA_TYPE',
      'POST /login takes the form application/x-www-form-urlencoded (token=...)',
    );
  }
  const token = new URLSearchParams(req.body ?? '').get('token');
  if (token === null || !access.tokenMatches(token)) {
    return html(401, loginPage({ tokenConfigured: true, message: 'Wrong token.' }));
  }
  return redirect('/', { 'set-cookie': access.sessions.setCookie(access.cookieName) });
}

function assetOf(req: AdminRequest, name: string): AdminResponse {
  let a;
  try {
    a = asset(name);
  } catch (err) {
    throw new AdminRequestError('CORAL_ERR_ADMIN_UNAVAILABLE', (err as Error).message);
  }
  if (!a) throw new AdminRequestError('CORAL_ERR_ADMIN_NOT_FOUND', `no such asset: ${name}`);
  const headers = {
    ...PAGE_SECURITY_HEADERS,
    'content-type': a.type,
    'cache-control': 'no-cache',
    etag: a.etag,
  };
  if (header(req.headers, 'if-none-match') === a.etag) return { status: 304, headers, body: '' };
  return { status: 200, headers, body: a.body };
}

function html(status: number, body: string): AdminResponse {
  return {
    status,
    headers: {
      ...PAGE_SECURITY_HEADERS,
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
    },
    body,
  };
}

function redirect(location: string, extra: Record<string, string> = {}): AdminResponse {
  return {
    status: 303,
    headers: { ...PAGE_SECURITY_HEADERS, location, 'cache-control': 'no-store', ...extra },
    body: '',
  };
}
