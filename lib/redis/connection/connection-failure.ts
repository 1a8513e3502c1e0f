import type { RedisFailureReason } from '../../interfaces/redis-server.interface';
import { redactUrlsIn } from '../../config/redact-url';

/** What went wrong with a connection: its kind and the driver's own words. */
export interface ConnectionFailure {
  readonly reason: RedisFailureReason;
  /** The driver's text, e.g. `connect ECONNREFUSED 127.0.0.1:6379` (credentials masked). */
  readonly detail: string;
}

/** How each reason reads in a log line. */
export const FAILURE_PHRASES: Readonly<Record<RedisFailureReason, string>> = {
  refused: 'connection refused',
  unknown_host: 'unknown host',
  unreachable: 'host unreachable',
  timeout: 'timed out',
  auth: 'authentication failed',
  tls: 'TLS failure',
  protocol: 'protocol error (is it a Redis server?)',
  closed: 'connection closed',
  other: 'connection error',
};

const CODE_REASONS: Readonly<Record<string, RedisFailureReason>> = {
  ECONNREFUSED: 'refused',
  ENOTFOUND: 'unknown_host',
  EAI_AGAIN: 'unknown_host',
  EAI_NONAME: 'unknown_host',
  EAI_NODATA: 'unknown_host',
  EAI_FAIL: 'unknown_host',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EHOSTDOWN: 'unreachable',
  ENETDOWN: 'unreachable',
  EADDRNOTAVAIL: 'unreachable',
  ETIMEDOUT: 'timeout',
  ECONNRESET: 'closed',
  EPIPE: 'closed',
  ECONNABORTED: 'closed',
  EPROTO: 'tls',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'tls',
  SELF_SIGNED_CERT_IN_CHAIN: 'tls',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'tls',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'tls',
  CERT_HAS_EXPIRED: 'tls',
  CERT_NOT_YET_VALID: 'tls',
  CERT_UNTRUSTED: 'tls',
};

/** Texts ioredis gives a command that failed because the link is down: a symptom, not a cause. */
const SYMPTOMS = [
  'Connection is closed.',
  'Command aborted due to connection close',
  "Stream isn't writeable and enableOfflineQueue options is false",
  'None of startup nodes is available',
];

/**
 * The cause in `err` when it is a connection failure (a socket, DNS, TLS or auth error, or a
 * non-Redis peer); `undefined` for anything else, server replies (WRONGTYPE, OOM, NOPERM ...)
 * and ioredis's symptoms of a down link (see {@link isLinkDownSymptom}) included.
 */
export function classifyConnectionError(err: unknown): ConnectionFailure | undefined {
  if (!isErrorLike(err)) return undefined;
  // NOTE: ioredis wraps the last node's error when no cluster node answers
  const lastNodeError = (err as { lastNodeError?: unknown }).lastNodeError;
  const fromNode = isErrorLike(lastNodeError) ? classifyConnectionError(lastNodeError) : undefined;
  // NOTE: ioredis's Cluster does not pass on the node's socket error ("Connection is closed.")
  if (fromNode) return fromNode;
  const reason = reasonOf(err);
  return reason === undefined ? undefined : { reason, detail: detailOf(err) };
}

/** The driver's text on one line; OpenSSL's long form cut to its reason and code. */
function detailOf(err: Error): string {
  const code = (err as { code?: unknown }).code;
  const openssl = /SSL routines:[^:]*:([^:]+)/.exec(err.message);
  if (openssl) return `${openssl[1].trim()}${typeof code === 'string' ? `, ${code}` : ''}`;
  return maskCredentials(err.message.replace(/\s+/g, ' ').trim());
}

function reasonOf(err: Error): RedisFailureReason | undefined {
  const code = (err as { code?: unknown }).code;
  const message = err.message ?? '';
  // WRONGPASS / NOAUTH as a reply, or inside ioredis's "Ready check failed: NOAUTH ..."
  if (/(^|: )(WRONGPASS|NOAUTH)\b|invalid password|invalid username-password/i.test(message)) {
    return 'auth';
  }
  if (
    typeof code === 'string' &&
    (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.startsWith('ERR_OSSL'))
  ) {
    return 'tls';
  }
  if (/\b(TLS|SSL)\b|certificate|wrong version number/i.test(message)) return 'tls';
  if (typeof code === 'string' && code in CODE_REASONS) return CODE_REASONS[code];
  // ioredis 5's parser says ParserError "Protocol error, got ..."; ioredis 6's "Unknown RESP type"
  if (err.name === 'ParserError' || /^(Protocol error|Unknown RESP type)/.test(message)) {
    return 'protocol';
  }
  if (err.name === 'ClusterAllFailedError' || message.startsWith('Failed to refresh slots cache'))
    return 'other';
  return undefined;
}

/**
 * True for the errors ioredis gives a command that failed because the link is down (flushed
 * when a connection attempt failed, or the connection closed): the cause is in the connection's
 * last `error` event, not in this error.
 */
export function isLinkDownSymptom(err: unknown): boolean {
  if (!isErrorLike(err)) return false;
  return (
    err.name === 'MaxRetriesPerRequestError' || SYMPTOMS.some((s) => err.message.startsWith(s))
  );
}

/** The phrase and the driver's words, without repeating one in the other. */
export function failureText(failure: ConnectionFailure): string {
  const phrase = FAILURE_PHRASES[failure.reason];
  return failure.detail && failure.detail !== phrase ? `${phrase} (${failure.detail})` : phrase;
}

/** Hides the credentials of any URL that a driver text might quote. */
export function maskCredentials(text: string): string {
  return redactUrlsIn(text);
}

/**
 * An Error by shape: socket errors are made in Node's realm, which is not the caller's under a
 * test runner's vm sandbox, so `instanceof Error` can miss them.
 */
function isErrorLike(err: unknown): err is Error {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { message?: unknown }).message === 'string' &&
    typeof (err as { name?: unknown }).name === 'string'
  );
}
