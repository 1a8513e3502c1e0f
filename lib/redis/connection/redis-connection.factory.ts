import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { EchoStreamClusterOptions } from '../../interfaces/module-options.interface';
import { EchoStreamConfigError } from '../../errors/echo-stream-config.error';
import { INVALID_URL, redactUrlsIn, viewRedisUrl } from '../../config/redact-url';
import type { RedisConnection } from './cluster-routing';

/**
 * What a connection is for: a loop's own (it parks reads on it), a shared read of one group
 * (`read`), the loops' other commands with shared reads (`commands`), the app's shared one
 * (producer, admin, stats, CLIENT UNBLOCK), or the one of durable publishes (their `WAIT` holds
 * it; opened on first use; set up as `shared`). The name shows in CLIENT LIST as
 * `echo-stream-<purpose>`.
 */
export type ConnectionPurpose = 'loop' | 'read' | 'commands' | 'shared' | 'publish';

/**
 * Reconnect delay after the `times`-th failed attempt: 50 ms more each time, at most 2 s (the
 * ioredis 5 default). NOTE: ioredis 6 doubles the delay up to 5 s (+ jitter), so a Redis back
 * after a few seconds was noticed up to 5 s late and a loop sat `degraded` that long; the loop's
 * own backoff already paces its retries, the socket should come back as soon as Redis does.
 * A `retryStrategy` in the user's connection options still wins.
 */
export function reconnectDelay(times: number): number {
  return Math.min(times * 50, 2000);
}

/** Where to connect (internal). */
export interface ConnectionTarget {
  connection: RedisOptions | string;
  cluster: EchoStreamClusterOptions | undefined;
}

/**
 * Opens an ioredis connection. A loop's connection fails commands at once when the link is down
 * (`maxRetriesPerRequest: 0`), so the loop's own backoff paces retries instead of a hidden queue;
 * ioredis still reconnects underneath. The shared connection (producer, admin, stats) does the
 * same and never re-sends a command whose reply was lost (`autoResendUnfulfilledCommands: false`):
 * an XADD that may have been written is reported to its caller, not written a second time.
 */
export function createConnection(
  target: ConnectionTarget,
  purpose: ConnectionPurpose,
  onError: (err: Error) => void,
): RedisConnection {
  // NOTE: no `protocol` here: the loops speak ioredis 6's default, RESP3, or what the user's
  // options ask for; both read the same (reply-shapes.ts) and drain equally fast
  // (docs/compatibility.md "ioredis 6 and RESP3").
  const forLoops = purpose === 'loop' || purpose === 'read' || purpose === 'commands';
  const overrides: RedisOptions = forLoops
    ? { maxRetriesPerRequest: 0, enableAutoPipelining: false }
    : { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false };
  const connectionName = `echo-stream-${purpose}`;
  let redis: RedisConnection;
  if (target.cluster) {
    const { nodes, options = {} } = target.cluster;
    redis = new Cluster(nodes, {
      ...options,
      enableAutoPipelining: false,
      // PEL and stream reads decide what is acked (a replica may lag): always ask the masters
      scaleReads: 'master',
      redisOptions: { connectionName, ...options.redisOptions, ...overrides },
      // As `maxRetriesPerRequest: 0` on one node: no hidden retry loop on CLUSTERDOWN or a lost
      // node (100 ms x maxRedirections, longer than a short read's deadline); the loop's backoff
      // paces retries and its state says `degraded`. MOVED / ASK are still followed at once.
      // The other connections (publishes) keep the resends that are safe and lose the one that
      // is not: see clusterResendOverrides.
      ...(forLoops
        ? { maxRedirections: 16, retryDelayOnClusterDown: 0, retryDelayOnFailover: 0 }
        : clusterResendOverrides()),
    });
  } else if (typeof target.connection === 'string') {
    redis = openUrl(target.connection, {
      connectionName,
      retryStrategy: reconnectDelay,
      ...overrides,
    });
  } else {
    redis = new Redis({
      connectionName,
      retryStrategy: reconnectDelay,
      ...target.connection,
      ...overrides,
    });
  }
  // ioredis emits 'error' on every failed reconnect; unhandled, Node would print each one.
  redis.on('error', onError);
  return redis;
}

/**
 * What a Cluster connection that writes (shared, publish) may re-send on its own, so a write is
 * never sent twice (docs/scale.md "Redis Cluster"). ioredis re-sends a command whose reply was
 * an error in four cases; a reply of MOVED, ASK, TRYAGAIN or CLUSTERDOWN means the node did NOT
 * run the command, so following or repeating it writes once (kept: a publish rides through a
 * short CLUSTERDOWN). The fifth re-send is `retryDelayOnFailover`: a command in flight on a node
 * connection that closed ("Connection is closed.", a master killed or cut mid-write) is sent
 * again 100 ms later, though the first send may have been written (an XADD twice, under one
 * branded id). Off: such a command rejects and the publish says `written: 'unknown'`. The node
 * connections re-send nothing after a reconnect either (`autoResendUnfulfilledCommands: false`
 * in their options); the Cluster's own offline queue holds only commands never sent.
 * Set last, so a user's ClusterOptions cannot turn the re-send back on.
 */
export function clusterResendOverrides(): { retryDelayOnFailover: 0 } {
  return { retryDelayOnFailover: 0 };
}

/**
 * `new Redis(url, options)`, its errors without the URL: ioredis's parser throws the TypeError of
 * `new URL()`, whose `input` field holds the whole URL, password included. What is thrown instead
 * says which URL (redacted) and why, and keeps no reference to the driver's error.
 */
export function openUrl(url: string, options: RedisOptions): Redis {
  const view = viewRedisUrl(url);
  if (!view.valid) {
    throw new EchoStreamConfigError(`cannot use the Redis URL ${INVALID_URL} (${view.problem})`);
  }
  try {
    return new Redis(url, options);
  } catch (err) {
    const reason = redactUrlsIn(err instanceof Error ? err.message : String(err));
    throw new EchoStreamConfigError(`cannot use the Redis URL ${view.shown}: ${reason}`);
  }
}
