/** Injection token of the resolved dashboard options (internal). */
export const DASHBOARD_OPTIONS = Symbol('ECHO_STREAM_DASHBOARD_OPTIONS');

/** Largest `count` of one page (PEL, dead letters, tail) and of one mutation's ids. */
export const MAX_PAGE_COUNT = 1000;

/** `count` of a page when the query has none. */
export const DEFAULT_PAGE_COUNT = 50;

/** Longest payload preview, in characters (the rest is cut with '…'). */
export const PREVIEW_CHARS = 200;

/**
 * Sent with every answer under the mount path: nothing but the dashboard's own files may load,
 * nothing may frame it.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * Headers of every answer under the mount path (page, assets, API, and every refusal: the host
 * check's, a guard's 403, a 400, a 404): the strict CSP, no sniffing, no caching, no referrer.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
};
