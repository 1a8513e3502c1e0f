import { isPartitionCount } from '../codec/partition-key';
import { hostname } from 'node:os';
import type { RedisOptions } from 'ioredis';
import { resolveCodec } from '../codec/codecs';
import { deadLetterStreamOf } from '../codec/dead-letter-fields';

import {
  checkDedupOption,
  checkRateLimitOption,
  checkRetryOption,
  DEFAULT_RETRY_POLICY,
} from './delivery-options';
import type { ResolvedHandlerOptions } from './handler-definitions';
import { messages } from './messages';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import { INVALID_URL, viewRedisUrl } from './redact-url';
import type { EchoStreamMetricsOptions } from '../interfaces/metrics-options.interface';
import type {
  EchoStreamClusterOptions,
  EchoStreamModuleOptions,
} from '../interfaces/module-options.interface';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface';
import type { ServerFeatureMode } from '../interfaces/redis-server.interface';
import {
  checkConsumerCleanup,
  LIFECYCLE_DEFAULTS,
  resolveRetention,
  type ResolvedRetentionRule,
} from './lifecycle-options';
import { checkMetricsOptions } from './metrics-options';

/** Module options with every default applied (internal). */
export interface ResolvedModuleOptions {
  connection: RedisOptions | string;
  cluster: EchoStreamClusterOptions | undefined;
  metrics: EchoStreamMetricsOptions | undefined;
  consumerName: string;
  defaults: Partial<StreamHandlerOptions>;
  shutdownTimeoutMs: number;
  autoStart: boolean;
  sharedReads: boolean;
  publishTimeoutMs: number;
  /** `producer.idempotent`: publish idempotently unless a call says otherwise. */
  idempotentPublish: boolean;
  /** `producer.partitions`: the partition count of each partitioned stream published to. */
  producerPartitions: Readonly<Record<string, number>>;
  idempotencyWindowMs: number;
  /** `serverFeatures`: `'baseline'` takes the Redis 7 path on any server. */
  serverFeatures: ServerFeatureMode;
  /** Retention rules, validated (docs/operations.md "Retention and archive"). */
  retention: ResolvedRetentionRule[];
  retentionIntervalMs: number;
}

/** The documented module defaults (README "Options"). */
export const MODULE_DEFAULTS = {
  connection: 'redis://127.0.0.1:6379',
  shutdownTimeoutMs: 10_000,
  autoStart: true,
  sharedReads: true,
  publishTimeoutMs: 2000,
  idempotencyWindowMs: 600_000,
  serverFeatures: 'auto',
} as const;

/**
 * The documented handler defaults (README "Options"; `claimIntervalMs` and `deadLetterStream`
 * derive).
 */
export const HANDLER_DEFAULTS = {
  batchSize: 100,
  blockMs: 5000,
  concurrency: 1,
  minIdleMs: 30_000,
  maxClaimPasses: null,
  maxDeliveries: 5,
  startId: '0',
  codec: 'json',
  batch: false,
  consumerCleanup: { idleMs: LIFECYCLE_DEFAULTS.consumerCleanupIdleMs },
  retry: DEFAULT_RETRY_POLICY,
  rateLimit: null,
  dedup: false,
  newerWins: null,
  partitions: null,
  partitionLeaseMs: 10_000,
  exactlyOnce: false,
  deleteOnAck: false,
} as const;

const HANDLER_OPTION_NAMES: ReadonlyArray<keyof StreamHandlerOptions> = [
  'batchSize',
  'blockMs',
  'concurrency',
  'minIdleMs',
  'claimIntervalMs',
  'maxClaimPasses',
  'maxDeliveries',
  'startId',
  'codec',
  'batch',
  'deadLetterStream',
  'consumerCleanup',
  'retry',
  'rateLimit',
  'dedup',
  'newerWins',
  'partitions',
  'partitionLeaseMs',
  'exactlyOnce',
  'deleteOnAck',
];

const MODULE_OPTION_NAMES: ReadonlyArray<keyof EchoStreamModuleOptions> = [
  'connection',
  'cluster',
  'metrics',
  'consumerName',
  'defaults',
  'shutdownTimeoutMs',
  'autoStart',
  'sharedReads',
  'publishTimeoutMs',
  'producer',
  'idempotencyWindowMs',
  'serverFeatures',
  'retention',
  'retentionIntervalMs',
];

/** Module options -> resolved options; the one place module defaults are merged. */
export function resolveOptions(options: EchoStreamModuleOptions = {}): ResolvedModuleOptions {
  const where = 'EchoStreamModule';
  checkKnown(where, options, MODULE_OPTION_NAMES);
  const connection = options.connection ?? MODULE_DEFAULTS.connection;
  if (typeof connection === 'string') checkConnectionUrl(where, connection);
  if (typeof connection !== 'string' && (typeof connection !== 'object' || connection === null)) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'connection', 'a URL or ioredis options', connection),
    );
  }
  if (options.cluster !== undefined && !Array.isArray(options.cluster?.nodes)) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'cluster', '{ nodes: [...] }', options.cluster),
    );
  }
  // a node given as a URL is parsed by ioredis only when the Cluster connects: its error (with
  // the whole URL in 'input') would reach the first command instead of bootstrap
  for (const node of options.cluster?.nodes ?? []) {
    if (typeof node === 'string') checkUrl(where, 'cluster.nodes', CLUSTER_NODE, node);
  }
  const metrics = checkMetricsOptions(where, options.metrics);
  const consumerName = options.consumerName ?? `${hostname()}-${process.pid}`;
  if (typeof consumerName !== 'string' || consumerName.length === 0) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'consumerName', 'a non-empty string', consumerName),
    );
  }
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? MODULE_DEFAULTS.shutdownTimeoutMs;
  checkInteger(where, 'shutdownTimeoutMs', shutdownTimeoutMs, 0);
  const autoStart = options.autoStart ?? MODULE_DEFAULTS.autoStart;
  if (typeof autoStart !== 'boolean') {
    throw new EchoStreamConfigError(messages.badOption(where, 'autoStart', 'a boolean', autoStart));
  }
  const sharedReads = options.sharedReads ?? MODULE_DEFAULTS.sharedReads;
  if (typeof sharedReads !== 'boolean') {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'sharedReads', 'a boolean', sharedReads),
    );
  }
  const publishTimeoutMs = options.publishTimeoutMs ?? MODULE_DEFAULTS.publishTimeoutMs;
  checkInteger(where, 'publishTimeoutMs', publishTimeoutMs, 1);
  const producer = options.producer ?? {};
  if (typeof producer !== 'object' || producer === null || Array.isArray(producer)) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'producer', '{ idempotent?: boolean }', producer),
    );
  }
  checkKnown(`${where} producer`, producer, ['idempotent', 'partitions']);
  const producerPartitions = checkProducerPartitions(where, producer.partitions);
  const idempotentPublish = producer.idempotent ?? false;
  if (typeof idempotentPublish !== 'boolean') {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'producer.idempotent', 'a boolean', idempotentPublish),
    );
  }
  const idempotencyWindowMs = options.idempotencyWindowMs ?? MODULE_DEFAULTS.idempotencyWindowMs;
  checkInteger(where, 'idempotencyWindowMs', idempotencyWindowMs, 1);
  const serverFeatures = options.serverFeatures ?? MODULE_DEFAULTS.serverFeatures;
  if (serverFeatures !== 'auto' && serverFeatures !== 'baseline') {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'serverFeatures', "'auto' or 'baseline'", serverFeatures),
    );
  }
  const defaults = options.defaults ?? {};
  checkHandlerOptions(`${where} defaults`, defaults);
  const retention = resolveRetention(where, options.retention, options.retentionIntervalMs);
  return {
    connection,
    cluster: options.cluster,
    metrics,
    consumerName,
    defaults,
    shutdownTimeoutMs,
    autoStart,
    sharedReads,
    publishTimeoutMs,
    idempotentPublish,
    producerPartitions,
    idempotencyWindowMs,
    serverFeatures,
    retention: retention.rules,
    retentionIntervalMs: retention.intervalMs,
  };
}

/**
 * Module defaults + decorator options -> every handler option, validated; the one place handler
 * defaults are merged.
 */
export function resolveHandlerOptions(
  stream: string,
  where: string,
  defaults: Partial<StreamHandlerOptions>,
  own: Partial<StreamHandlerOptions>,
): ResolvedHandlerOptions {
  const merged = { ...HANDLER_DEFAULTS, ...defaults, ...own };
  // exactlyOnce commits the entry's dedup record with its writes: on unless `dedup` was set
  if (merged.exactlyOnce === true && own.dedup === undefined && defaults.dedup === undefined)
    merged.dedup = true;
  const minIdleMs = merged.minIdleMs;
  const resolved = {
    ...merged,
    claimIntervalMs:
      merged.claimIntervalMs ?? Math.max(1, Math.min(Math.floor(minIdleMs / 2), 5000)),
    deadLetterStream: merged.deadLetterStream ?? deadLetterStreamOf(stream),
  };
  checkHandlerOptions(where, resolved);
  if (resolved.deadLetterStream === stream) {
    throw new EchoStreamConfigError(
      messages.badOption(
        where,
        'deadLetterStream',
        'another stream than the one it consumes',
        stream,
      ),
    );
  }
  return { ...resolved, codec: resolveCodec(resolved.codec) };
}

/** Checks the options a user wrote (any subset); throws a clear error on the first bad one. */
export function checkHandlerOptions(where: string, options: Partial<StreamHandlerOptions>): void {
  if (typeof options !== 'object' || options === null) {
    throw new EchoStreamConfigError(`${where}: options must be an object`);
  }
  checkKnown(where, options, HANDLER_OPTION_NAMES);
  const o = options;
  if (o.batchSize !== undefined) checkInteger(where, 'batchSize', o.batchSize, 1);
  if (o.blockMs !== undefined) checkInteger(where, 'blockMs', o.blockMs, 1);
  if (o.concurrency !== undefined) checkInteger(where, 'concurrency', o.concurrency, 1);
  if (o.minIdleMs !== undefined) checkInteger(where, 'minIdleMs', o.minIdleMs, 1);
  if (o.claimIntervalMs !== undefined) checkInteger(where, 'claimIntervalMs', o.claimIntervalMs, 1);
  if (o.maxClaimPasses !== undefined && o.maxClaimPasses !== null) {
    checkInteger(where, 'maxClaimPasses', o.maxClaimPasses, 1);
  }
  if (o.maxDeliveries !== undefined) checkInteger(where, 'maxDeliveries', o.maxDeliveries, 1);
  if (o.startId !== undefined && (typeof o.startId !== 'string' || o.startId.length === 0)) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'startId', "an id, '0' or '$'", o.startId),
    );
  }
  if (o.batch !== undefined && typeof o.batch !== 'boolean') {
    throw new EchoStreamConfigError(messages.badOption(where, 'batch', 'a boolean', o.batch));
  }
  if (
    o.deadLetterStream !== undefined &&
    o.deadLetterStream !== false &&
    (typeof o.deadLetterStream !== 'string' || o.deadLetterStream.length === 0)
  ) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'deadLetterStream', 'a stream name or false', o.deadLetterStream),
    );
  }
  if (o.consumerCleanup !== undefined) checkConsumerCleanup(where, o.consumerCleanup);
  if (o.retry !== undefined) checkRetryOption(where, o.retry);
  if (o.rateLimit !== undefined) checkRateLimitOption(where, o.rateLimit);
  if (o.dedup !== undefined) checkDedupOption(where, o.dedup);
  if (o.newerWins !== undefined && o.newerWins !== null && typeof o.newerWins !== 'function') {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'newerWins', 'a function (message) => key, or null', o.newerWins),
    );
  }
  checkPartitionOptions(where, o);
  checkExactlyOnce(where, o);
  if (o.deleteOnAck !== undefined && ![true, false, 'acked-by-all'].includes(o.deleteOnAck)) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'deleteOnAck', "true, false or 'acked-by-all'", o.deleteOnAck),
    );
  }
  if (o.codec !== undefined) {
    try {
      resolveCodec(o.codec);
    } catch (err) {
      throw new EchoStreamConfigError(`${where}: ${(err as Error).message}`);
    }
  }
}

function checkKnown(where: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key))
      throw new EchoStreamConfigError(messages.unknownOption(where, key, known));
  }
}

function checkInteger(where: string, option: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new EchoStreamConfigError(
      messages.badOption(where, option, `an integer >= ${min}`, value),
    );
  }
}

/**
 * A `redis://` / `rediss://` URL ioredis can read; the error shows it without credentials, and
 * not at all when it does not parse (a password holding `/` or `@` would be quoted otherwise).
 */
function checkConnectionUrl(where: string, connection: string): void {
  checkUrl(where, 'connection', CONNECTION, connection);
  if (!/^rediss?:\/\//i.test(connection)) {
    const scheme = /^[a-z][a-z0-9+.-]{0,20}:/i.exec(connection)?.[0];
    const got = scheme === undefined ? 'a URL without scheme' : `a URL of scheme '${scheme}'`;
    throw new EchoStreamConfigError(messages.badUrl(where, 'connection', CONNECTION, got));
  }
}

/** A URL ioredis can read (see `viewRedisUrl`), else an error quoting nothing of it. */
function checkUrl(where: string, option: string, expected: string, url: string): void {
  const view = viewRedisUrl(url);
  if (!view.valid) {
    throw new EchoStreamConfigError(
      messages.badUrl(where, option, expected, `${INVALID_URL} (${view.problem})`),
    );
  }
}

const CONNECTION = 'a redis:// or rediss:// URL or ioredis options';
const CLUSTER_NODE = 'a list of URLs, host:port strings, ports or { host, port }';

/** `partitions` (an integer from 1 to 1024, or null), `partitionLeaseMs`, not with `batch`. */
function checkPartitionOptions(where: string, o: Partial<StreamHandlerOptions>): void {
  const { partitions } = o;
  if (partitions !== undefined && partitions !== null && !isPartitionCount(partitions)) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'partitions', 'an integer from 1 to 1024, or null', partitions),
    );
  }
  if (o.partitionLeaseMs !== undefined)
    checkInteger(where, 'partitionLeaseMs', o.partitionLeaseMs, 100);
  if (typeof o.partitions === 'number' && o.batch === true) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'partitions', 'null with batch: true', o.partitions),
    );
  }
}

/** `exactlyOnce` (a boolean), not with `batch` (a batch handler's acks are not per message). */
function checkExactlyOnce(where: string, o: Partial<StreamHandlerOptions>): void {
  if (o.exactlyOnce !== undefined && typeof o.exactlyOnce !== 'boolean') {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'exactlyOnce', 'a boolean', o.exactlyOnce),
    );
  }
  if (o.exactlyOnce === true && o.batch === true) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'exactlyOnce', 'false with batch: true', o.exactlyOnce),
    );
  }
}

/** `producer.partitions`: stream names to integers from 1 to 1024. */
function checkProducerPartitions(where: string, value: unknown): Record<string, number> {
  if (value === undefined) return {};
  const what = '{ [stream]: an integer from 1 to 1024 }';
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new EchoStreamConfigError(messages.badOption(where, 'producer.partitions', what, value));
  for (const [stream, count] of Object.entries(value))
    if (!isPartitionCount(count))
      throw new EchoStreamConfigError(
        messages.badOption(where, `producer.partitions['${stream}']`, what, count),
      );
  return { ...(value as Record<string, number>) };
}
