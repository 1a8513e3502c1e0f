/**
 * Why Redis could not be reached:
 * - `refused`: nothing listens at the address (ECONNREFUSED);
 * - `unknown_host`: the host name does not resolve (ENOTFOUND, EAI_AGAIN);
 * - `unreachable`: no route to the host (EHOSTUNREACH, ENETUNREACH);
 * - `timeout`: no connection or no reply in time (ETIMEDOUT, a command deadline, `publishTimeoutMs`);
 * - `auth`: the server refused the credentials (WRONGPASS, NOAUTH);
 * - `tls`: the TLS handshake or the certificate check failed;
 * - `protocol`: the peer does not speak the Redis protocol;
 * - `closed`: the connection was closed or reset by the peer or the network;
 * - `other`: any other connection error (its text is kept in `detail`).
 */
export type RedisFailureReason =
  | 'refused'
  | 'unknown_host'
  | 'unreachable'
  | 'timeout'
  | 'auth'
  | 'tls'
  | 'protocol'
  | 'closed'
  | 'other';

// NOTE: a type alias, not an interface: it sits inside the health indicator's result, which must
// stay assignable to @nestjs/terminus's `HealthIndicatorResult` (an index signature).

/** The app's shared Redis connection (producer, admin, stats) as a person should read it. */
export type RedisLinkStatus = {
  /** `host:port` (or the socket path); never credentials. */
  readonly address: string;
  /** `down`: a connection attempt failed or the link was lost, and it is not back yet. */
  readonly state: 'connecting' | 'ready' | 'down' | 'ended';
  /** `false` until the connection reached Redis once. */
  readonly everConnected: boolean;
  /** Why it is down: a line naming the cause and the address; `null` unless `down`. */
  readonly error: string | null;
  /** The kind of failure; `null` unless `down`. */
  readonly reason: RedisFailureReason | null;
  /** When the outage began (ms since epoch); `null` unless `down`. */
  readonly downSince: number | null;
};
