/**
 * Which `Host` (and, for a mutation, which `Origin`) may reach the dashboard. A DNS-rebinding page
 * controls `Origin` and `Sec-Fetch-Site` as well as `Host` (its own name, now resolving to the
 * app), so the one thing it cannot forge is a host name the operator listed (internal).
 */

/** The hosts a dashboard answers when `allowedHosts` is not given: loopback only, any port. */
export const DEFAULT_ALLOWED_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** `allowedHosts` checked and normalised: `'*'` alone, or names with an optional pinned port. */
export type HostRules = { any: true } | { any: false; hosts: HostRule[] };

/** One allowed host: a lower-case name (IPv6 in brackets) and, when pinned, its port. */
export interface HostRule {
  name: string;
  port: string | undefined;
}

/** A `Host` header (or an origin's host) split into name and port; `undefined` when unreadable. */
interface HostPort {
  name: string;
  port: string | undefined;
}

/** `[v6]`, `[v6]:port`, `name` or `name:port`; a bare IPv6 address (two colons or more) is bracketed. */
const HOST_PORT = /^(\[[0-9a-f:.]+\]|[^\s:/@[\]]+)(?::(\d{1,5}))?$/i;

/**
 * Reads the `allowedHosts` option: `['*']` turns the check off, any other entry is `host` or
 * `host:port`. Returns a message naming the bad entry, or the rules.
 */
export function parseAllowedHosts(entries: readonly unknown[]): HostRules | string {
  if (entries.length === 0) return "it must name at least one host (or be ['*'])";
  if (entries.includes('*')) {
    return entries.length === 1 ? { any: true } : "'*' turns the check off and stands alone";
  }
  const hosts: HostRule[] = [];
  for (const entry of entries) {
    const parsed = typeof entry === 'string' ? splitHost(entry) : undefined;
    if (parsed === undefined) {
      return `${JSON.stringify(entry)} is not a host name, an IP address or host:port`;
    }
    hosts.push(parsed);
  }
  return { any: false, hosts };
}

/** Whether a request's `Host` header is one of `rules` (a missing or unreadable one is not). */
export function isHostAllowed(host: string | undefined, rules: HostRules): boolean {
  if (rules.any) return true;
  const parsed = host === undefined ? undefined : splitHost(host);
  if (parsed === undefined) return false;
  return rules.hosts.some(
    (rule) => rule.name === parsed.name && (rule.port === undefined || rule.port === parsed.port),
  );
}

/**
 * Why a mutation's `Origin` is refused, or `undefined` when it is allowed: it must be present,
 * readable, name an allowed host, and be the host the request was sent to (`Host`).
 */
export function originRefusal(
  origin: string | undefined,
  host: string | undefined,
  rules: HostRules,
): string | undefined {
  if (origin === undefined || origin === '' || origin === 'null') return 'no Origin header';
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return 'unreadable Origin header';
  }
  const from = splitHost(originHost);
  const to = host === undefined ? undefined : splitHost(host);
  if (from === undefined || !isHostAllowed(originHost, rules)) {
    return `Origin ${origin.slice(0, 100)} is not an allowed host`;
  }
  // URL drops a scheme's default port (http://h:80 -> h); a Host header may still carry it
  const port = (p: string | undefined) => (p === '80' || p === '443' ? undefined : p);
  if (to === undefined || from.name !== to.name || port(from.port) !== port(to.port)) {
    return `Origin ${origin.slice(0, 100)} is not this host`;
  }
  return undefined;
}

function splitHost(text: string): HostPort | undefined {
  let value = text.trim().toLowerCase();
  if (!value.startsWith('[') && (value.match(/:/g) ?? []).length > 1) value = `[${value}]`;
  const match = HOST_PORT.exec(value);
  if (match === null) return undefined;
  const port = match[2];
  if (port !== undefined && Number(port) > 65535) return undefined;
  // `localhost.` is the same name as `localhost`
  const name = match[1].endsWith('.') ? match[1].slice(0, -1) : match[1];
  return name === '' ? undefined : { name, port };
}
