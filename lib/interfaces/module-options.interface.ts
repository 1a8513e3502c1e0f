import type { ServerFeatureMode } from './redis-server.interface';
import type { ClusterNode, ClusterOptions, RedisOptions } from 'ioredis';
import type { RetentionRule } from './lifecycle.interface';
import type { EchoStreamMetricsOptions } from './metrics-options.interface';
import { StreamHandlerOptions } from './stream-handler-options.interface';

/** A Redis Cluster to use instead of `connection`. */
export interface EchoStreamClusterOptions {
  nodes: ClusterNode[];
  options?: ClusterOptions;
}

/** Options of `EchoStreamModule.forRoot()` / `forRootAsync()`. */
export interface EchoStreamModuleOptions {
  /**
   * Where the streams live: ioredis options or a `redis://` / `rediss://` URL.
   * @default 'redis://127.0.0.1:6379'
   */
  connection?: RedisOptions | string;
  /** Use a Redis Cluster instead of `connection`. */
  cluster?: EchoStreamClusterOptions;
  /**
   * Register the module's metrics in the app's prom-client registry (optional peer
   * `prom-client` ^15). Without it nothing is registered; `ConsumerStats.prometheus()` works
   * either way.
   * @default undefined (no registry)
   */
  metrics?: EchoStreamMetricsOptions;
  /**
   * This process's consumer name in every group. A stable name lets a restarted process drain
   * its own pending entries at once.
   * @default `${hostname}-${pid}`
   */
  consumerName?: string;
  /** Defaults for every handler (see {@link StreamHandlerOptions}). */
  defaults?: Partial<StreamHandlerOptions>;
  /**
   * How long shutdown waits (ms) for in-flight handlers.
   * @default 10000
   */
  shutdownTimeoutMs?: number;
  /**
   * Start loops on application bootstrap; with `false`, call `EchoStreamAdmin.start()`.
   * @default true
   */
  autoStart?: boolean;
  /**
   * Shared reads (docs/scale.md "Many handlers"): the loops of one group name on one Redis node (on
   * a Cluster: one hash slot) wait for new entries in one blocking `XREADGROUP ... STREAMS s1 s2
   * ...` on one connection, and send every other command over one loop-commands connection; so an
   * app holds (group names + 2) connections per node however many handlers it has. Each loop keeps
   * the rest of its own (PEL drain, reclaim, dead letters, retries, concurrency, stats). `false`:
   * every loop parks its read on a connection of its own, as before.
   * @default true
   * @see docs/scale.md "Many handlers"
   */
  sharedReads?: boolean;
  /**
   * How long (ms) `StreamProducer.publish()` / `publishMany()` may take in all while Redis is
   * unreachable or slow: waiting for a connection (nothing is queued meanwhile) plus waiting for
   * the reply. Past it the call rejects with `EchoStreamPublishError`; the write is never sent
   * twice by the package.
   * @default 2000
   * @see docs/operations.md "When Redis is down"
   */
  publishTimeoutMs?: number;
  /**
   * Defaults of `StreamProducer.publish()` / `publishMany()`; a call's own option wins.
   * @default {} (idempotent: false)
   */
  producer?: EchoStreamProducerOptions;
  /**
   * Idempotent publish: how long (ms) a branded id written to a stream is remembered; a publish
   * of the same id within it writes nothing and answers the first write's receipt. The memory
   * it holds is bounded by the ids published within this window.
   * @default 600000
   * @see docs/publishing.md "Idempotent publish"
   */
  idempotencyWindowMs?: number;
  /**
   * `'auto'`: use a newer server's verbs where the module has them in use and they keep the same
   * guarantee (CLAIM on reads of new entries, IDMP for `idempotent` publishes, XACKDEL for
   * `deleteOnAck`), asked once per connection (every master of a Cluster);
   * `'baseline'`: the Redis 7 path on any server.
   * @default 'auto'
   * @see docs/compatibility.md "Server features"
   */
  serverFeatures?: ServerFeatureMode;
  /**
   * Safe retention: per stream, trim entries older than `maxAgeMs` and/or beyond the newest
   * `maxLen`, never one that a group of the stream has not acknowledged yet.
   * @default [] (nothing trimmed)
   * @see docs/operations.md "Retention and archive"
   */
  retention?: RetentionRule[];
  /**
   * How often (ms) retention runs; one process per stream does the work (a lock in Redis).
   * @default 60000
   */
  retentionIntervalMs?: number;
}

/** Module-wide defaults of `StreamProducer` (`producer` module option). */
export interface EchoStreamProducerOptions {
  /**
   * Publish idempotently by default (`publish(..., { idempotent: true })` on every call that
   * does not say otherwise).
   * @default false
   * @see docs/publishing.md "Idempotent publish"
   */
  idempotent?: boolean;
  /**
   * The partition count of each partitioned stream this app publishes to with `{ key }`, e.g.
   * `{ orders: 16 }`: stored at bootstrap unless one is (SET NX); a different stored count fails
   * bootstrap. A keyed publish to a stream not listed uses the stored count.
   * @default {}
   * @see docs/partitions.md "Partition count"
   */
  partitions?: Record<string, number>;
}
