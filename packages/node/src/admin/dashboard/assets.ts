/**
 * The dashboard's static assets, all served by the node itself under /dashboard/: the page's
 * script (compiled from ./client by `tsc -b` into dist/admin/dashboard/client), uPlot from
 * node_modules (a dependency of @coral/node, so production installs and the image carry it), the
 * style sheet and the icon. A fixed table: no path from a request ever reaches the file system.
 * Files are read once, on first use, and answered with a strong ETag.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { FAVICON, STYLES } from './styles.js';

export interface Asset {
  type: string;
  body: string;
  etag: string;
}

const require = createRequire(import.meta.url);
/** packages/node/dist/admin/dashboard/client/ (the same relative path from src/ and dist/). */
const CLIENT_DIR = new URL('../../../dist/admin/dashboard/client/', import.meta.url);

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** The page's script: app.js and the modules it imports (./client, one file per component). */
const CLIENT_MODULES = [
  'app.js',
  'charts.js',
  'dom.js',
  'fleet-panels.js',
  'format.js',
  'history.js',
  'summary.js',
  'traffic-panels.js',
  'view.js',
] as const;

const SOURCES: Record<string, { type: string; load: () => string }> = {
  ...Object.fromEntries(
    CLIENT_MODULES.map((name) => [
      name,
      { type: JS, load: () => readFileSync(new URL(name, CLIENT_DIR), 'utf8') },
    ]),
  ),
  'uplot.js': {
    type: JS,
    load: () => readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
  },
  'uplot.css': {
    type: CSS,
    load: () => readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  },
  'app.css': { type: CSS, load: () => STYLES },
  'favicon.svg': { type: 'image/svg+xml', load: () => FAVICON },
};

/** Names under /dashboard/ that exist. */
export const ASSET_NAMES: readonly string[] = Object.keys(SOURCES);

const cache = new Map<string, Asset>();

/**
 * The asset called `name`, or undefined when there is none by that name. Throws when a file that
 * should be there cannot be read (the workspace was not built: `npm run build`).
 */
export function asset(name: string): Asset | undefined {
  const known = cache.get(name);
  if (known) return known;
  if (!Object.hasOwn(SOURCES, name)) return undefined;
  const source = SOURCES[name]!;
  let body: string;
  try {
    body = source.load();
  } catch (err) {
    const path = name.endsWith('.js') && !name.startsWith('uplot') ? fileURLToPath(CLIENT_DIR) : '';
    throw new Error(
      `dashboard asset ${name} is missing${path ? ` from ${path} (run npm run build)` : ''}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  const a = { type: source.type, body, etag };
  cache.set(name, a);
  return a;
}
