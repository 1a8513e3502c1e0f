/**
 * How a Redis URL may be shown (CLI output, errors, logs): never with its credentials, never
 * echoed when it does not parse. Plain TypeScript, no Nest: the CLI, the module's options and the
 * connection factory share it.
 */

/** What is shown in place of a URL that cannot be used. */
export const INVALID_URL = '<invalid URL>';

/** Shown in place of the user name and password. */
const HIDDEN = '***';

/** Query parameters that may hold a secret (ioredis reads `password` and `username`). */
const SECRET_PARAM = /pass|pwd|secret|token|auth|cred|key|user/i;

const ENCODE_HINT =
  "percent-encode '/', '?', '#', '@' and '%' in the user name and password (%2F, %3F, %23, %40, %25)";

/** A Redis URL as it may be shown, or why it cannot be used. */
export type RedisUrlView =
  | { readonly valid: true; readonly shown: string }
  | { readonly valid: false; readonly problem: string };

/**
 * Reads `raw` as ioredis does (`redis://` / `rediss://`, a `host:port` without scheme, a
 * `//host` or a socket path) and says how it may be shown: `redis://***@host:port/db` with any
 * user name and password replaced and secret-looking query parameters (`password=`, ...) dropped.
 *
 * A URL is refused (`valid: false`, with a reason that quotes nothing of it) when ioredis could not
 * read it, when its user info is not valid percent-encoding, and when an `@` follows the host
 * (in the path, query or fragment): there a password holding `/`, `?` or `#` ended the user info
 * early, and part of it would be taken for the host, the port or the query.
 */
export function viewRedisUrl(raw: string): RedisUrlView {
  if (typeof raw !== 'string') return { valid: false, problem: 'not a string' };
  if (raw.startsWith('/') && !raw.startsWith('//')) return { valid: true, shown: socketPath(raw) };
  const text = /^rediss?:\/\//i.test(raw)
    ? raw
    : raw.startsWith('//')
      ? `redis:${raw}`
      : `redis://${raw}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { valid: false, problem: hasAt(text) ? `not a URL: ${ENCODE_HINT}` : 'not a URL' };
  }
  if (`${url.pathname}${url.search}${url.hash}`.includes('@')) {
    return { valid: false, problem: `an '@' follows the host: ${ENCODE_HINT}` };
  }
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    return { valid: false, problem: `malformed percent-encoding in the user info: ${ENCODE_HINT}` };
  }
  const userInfo = url.username !== '' || url.password !== '' ? `${HIDDEN}@` : '';
  const db = url.pathname === '/' ? '' : url.pathname;
  return { valid: true, shown: `${url.protocol}//${userInfo}${url.host}${db}${query(url.search)}` };
}

/**
 * `raw` as it may be shown: `redis://***@host:port/db` (see {@link viewRedisUrl}), or
 * `<invalid URL> (reason)` for a URL that cannot be used; the output is printable ASCII.
 */
export function redactUrl(raw: string): string {
  const view = viewRedisUrl(raw);
  return view.valid ? view.shown : `${INVALID_URL} (${view.problem})`;
}

/**
 * Every `redis://` / `rediss://` URL in a free text (a driver's message) redacted, or replaced by
 * `<invalid URL>`. A URL is taken up to a space, without the punctuation that ends a sentence;
 * a URL already redacted stays as it is.
 */
export function redactUrlsIn(text: string): string {
  return text.replace(/rediss?:\/\/\S*/gi, (token) => {
    const url = token.replace(/[.,;:)\]'"]+$/, '');
    const view = viewRedisUrl(url);
    return `${view.valid ? view.shown : INVALID_URL}${token.slice(url.length)}`;
  });
}

/** The query without secret-looking parameters, re-encoded (no control character survives). */
function query(search: string): string {
  if (search === '' || search === '?') return '';
  const params = new URLSearchParams(search);
  const kept = new URLSearchParams();
  params.forEach((value, key) => {
    if (!SECRET_PARAM.test(key)) kept.append(key, value);
  });
  const shown = kept.toString();
  return shown === '' ? '' : `?${shown}`;
}

/** A socket path (`/tmp/redis.sock?db=1`): the path encoded, the query as for a URL. */
function socketPath(raw: string): string {
  const at = raw.indexOf('?');
  const path = at === -1 ? raw : raw.slice(0, at);
  let shown: string;
  try {
    shown = encodeURI(path);
  } catch {
    shown = '<socket path>'; // a lone surrogate
  }
  return `${shown}${at === -1 ? '' : query(raw.slice(at))}`;
}

/** An `@` after the scheme: the text likely carries a user info. */
function hasAt(text: string): boolean {
  return text.indexOf('@', text.indexOf('//') + 2) !== -1;
}
