import * as fs from 'node:fs';
import * as path from 'node:path';

/** The page's static files, shipped in the package next to this file (`assets/`). */
export interface DashboardAssets {
  /** index.html with `{{BASE}}` where the mount path goes. */
  html: string;
  script: string;
  style: string;
  icon: string;
}

/** Reads the assets once (at module registration); a missing file fails the app's bootstrap. */
export function loadDashboardAssets(): DashboardAssets {
  const dir = assetsDir();
  const read = (name: string) => fs.readFileSync(path.join(dir, name), 'utf8');
  return {
    html: read('index.html'),
    script: read('dashboard.js'),
    style: read('dashboard.css'),
    icon: read('favicon.svg'),
  };
}

/**
 * The page for a request to `requestTarget` (the mount path as the client wrote it, global prefix
 * included): asset URLs and the API base are absolute paths, so `/echo-stream` and
 * `/echo-stream/` both work. Only the path part is used: an absolute-form target
 * (`GET http://other.host/echo-stream`) or one starting with `//` cannot point the page's scripts
 * at another host. The path is HTML-escaped; nothing else from the request reaches the page.
 */
export function renderPage(html: string, requestTarget: string, readOnly: boolean): string {
  const base = escapeHtml(requestPath(requestTarget).replace(/\/+$/, ''));
  return html.replaceAll('{{BASE}}', base).replaceAll('{{READ_ONLY}}', String(readOnly));
}

/** The path of a request target (origin-form or absolute-form), with a single leading slash. */
export function requestPath(requestTarget: string): string {
  let path: string;
  try {
    path = new URL(requestTarget, 'http://request.invalid').pathname;
  } catch {
    path = requestTarget.split(/[?#]/)[0];
  }
  return path.replace(/^[/\\]+/, '/');
}

/**
 * `assets/` next to this file, as the package ships it. NOTE: the package is CommonJS, so
 * `__dirname` is there; only the repository's own runs load `lib/` otherwise (ts-jest as ES
 * modules, where `__dirname` is undefined; the sample compiled to `.sample-dist/` without the
 * assets), from the repository root, where the sources are.
 */
function assetsDir(): string {
  const shipped = typeof __dirname === 'string' ? path.join(__dirname, 'assets') : undefined;
  if (shipped !== undefined && fs.existsSync(shipped)) return shipped;
  return path.resolve('lib', 'dashboard', 'assets');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
