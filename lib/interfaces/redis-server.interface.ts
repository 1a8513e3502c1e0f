/** What the app knows of its Redis server: the state of its link, and the newer verbs it answers. */

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

/**
 * A verb of a newer server that replaces work the module does with extra round trips or a script
 * (docs/compatibility.md "Server features"): `XREADGROUP ... CLAIM` (Redis 8.4), `XADD ... IDMP`
 * (Redis 8.6), XACKDEL and XDELEX (Redis 8.2).
 */
export type ServerFeature = 'CLAIM' | 'IDMP' | 'XACKDEL';

/**
 * The module option `serverFeatures`: `'auto'` uses a newer server's verbs where it has them,
 * `'baseline'` takes the Redis 7 path everywhere (for comparison, or a proxy that mangles them).
 */
export type ServerFeatureMode = 'auto' | 'baseline';

/** What `ConsumerStats.serverFeatures()` reports of the app's shared connection's server(s). */
export interface ServerFeatureReport {
  /** The module option `serverFeatures`. */
  readonly mode: ServerFeatureMode;
  /** The features the server answers (every master of a Cluster); `[]` under `'baseline'`. */
  readonly available: readonly ServerFeature[];
  /**
   * The features this version of the module uses where the server has them: CLAIM (reads of new
   * entries claim idle ones along), IDMP (`idempotent` publishes), XACKDEL (`deleteOnAck`);
   * `[]` under `'baseline'`.
   */
  readonly used: readonly ServerFeature[];
  /** Why the server could not be asked (COMMAND refused by an ACL, a lost link); absent if it was. */
  readonly error?: string;
}
