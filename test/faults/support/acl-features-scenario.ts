/**
 * The minimal ACL of the handler options that keep state of their own in Redis (docs/operations.md
 * "Redis ACL"), next to the plain-stream scenario of acl-scenario.ts: one Nest app, logged in as an
 * ACL user, with
 *
 * - a partitioned handler (`partitions: 2`, `dedup`): the stored count (SET NX, GET), the lease
 *   scripts (acquire, heartbeat, release), the pending probe script, the take-over of a dead
 *   peer's pending entry (XAUTOCLAIM), the per-partition checkpoints, the skip records of
 *   partition streams, and the consumer cleanup (its mark of life reads the leases; the dead
 *   peer, idle and holding nothing, is deleted);
 * - a handler with `rateLimit: { scope: 'group' }`: the budget script;
 * - a handler with `dedup` and `newerWins`: the ack-and-records script and the record look-up
 *   (MGET), with a duplicate and a stale entry skipped.
 *
 * Stream names come in the two forms slot-keys.ts builds keys for: without a hash tag
 * (`acl-parts`: keys `{acl-parts}...`) and with one (`{acl}:parts`: keys `{acl}:parts...` and
 * `{acl}:echo-dedup:{acl}:parts...`).
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  brandedId,
  ConsumerStats,
  partitionOf,
  partitionStreamOf,
  StreamHandler,
  type StreamMessage,
} from '../../../lib';
import type { RedisServer } from '../../support/redis-server';
import { sleep, waitFor } from '../../support/wait-for';
import { aclDenials } from './acl-scenario';
import { pendingCount } from './in-process-loop';
import { CaptureLogger, createEchoStreamApp } from './nest-app';

/** The handler options whose rules this scenario checks. */
export type AclFeature = 'partitions' | 'group-rate-limit' | 'skips';

export const ACL_FEATURES: readonly AclFeature[] = ['partitions', 'group-rate-limit', 'skips'];

/** The streams of one run: every name without a hash tag, or every name with one. */
export interface AclFeatureStreams {
  partitioned: string;
  limited: string;
  skipping: string;
}

/** The stream names of a run: `plain` (`acl-parts`) or `tagged` (`{acl}:parts`). */
export function aclFeatureStreams(form: 'plain' | 'tagged'): AclFeatureStreams {
  const name = (what: string) => (form === 'plain' ? `acl-${what}` : `{acl}:${what}`);
  return { partitioned: name('parts'), limited: name('limited'), skipping: name('skipping') };
}

const PARTITIONS = 2;
/** The partitioned handler's consumer cleanup `idleMs`: the dead peer goes within the run. */
const CLEANUP_IDLE_MS = 1500;

/**
 * The rules a partitioned handler needs beside REQUIRED_CONSUMER_ACL: the stored count (SET NX,
 * GET) and the lease and pending-probe scripts, whose calls the ACL checks one by one (their
 * HMGET and XPENDING are required already).
 */
export const PARTITIONED_CONSUMER_ACL = [
  '+set',
  '+get',
  '+evalsha',
  '+eval',
  // the lease scripts: the server's clock, the leases hash, the members sorted set
  '+time',
  '+hset',
  '+zadd',
  '+zremrangebyscore',
  '+pexpire',
  '+zrange',
  '+zrem',
  // the consumer cleanup's mark of life (every idleMs / 3, at most 30 s) reads the leases
  // (HGETALL, TIME) to touch only the partitions held; refused, the mark is skipped silently
  '+hgetall',
];

/**
 * The rules of the consumer cleanup (docs/operations.md "Consumer cleanup"), on a partitioned
 * stream run on each partition: the consumers (XINFO CONSUMERS) and the delete script (XPENDING,
 * XINFO CONSUMERS, XGROUP DELCONSUMER).
 */
export const CONSUMER_CLEANUP_ACL = [
  '+xinfo|consumers',
  '+xpending',
  '+eval',
  '+xgroup|delconsumer',
];

/** The rules of `rateLimit: { scope: 'group' }`: the budget script (TIME, GET, SET). */
export const GROUP_RATE_LIMIT_ACL = ['+evalsha', '+eval', '+time', '+get', '+set'];

/**
 * The rules of `dedup` / `newerWins`: the script that acks and writes the records (XACK, GET,
 * SET, MGET); the look-up outside it is an MGET, already required.
 */
export const SKIP_RECORDS_ACL = ['+evalsha', '+eval', '+get', '+set'];

/** The rules of `features`, each once (a partitioned handler runs the consumer cleanup here). */
export function featureRules(features: readonly AclFeature[]): string[] {
  const rules = features.flatMap((feature) =>
    feature === 'partitions'
      ? [...PARTITIONED_CONSUMER_ACL, ...CONSUMER_CLEANUP_ACL]
      : feature === 'group-rate-limit'
        ? GROUP_RATE_LIMIT_ACL
        : SKIP_RECORDS_ACL,
  );
  return [...new Set(rules)];
}

/** The hash tag of `stream` (`acl` of `{acl}:parts`), as Redis Cluster reads it; none: undefined. */
function hashTagOf(stream: string): string | undefined {
  return /^[^{]*\{([^}]+)\}/.exec(stream)?.[1];
}

/**
 * The key patterns of a consumer of `stream` with `features` (docs/operations.md "Redis ACL"):
 *
 * - every stream: the stream, its dead-letter stream and the package's keys next to it
 *   (`~orders ~orders:dlq ~{orders}*`; with a hash tag, `~{o}:eu ~{o}:eu:dlq ~{o}:eu:echo-*`);
 * - partitioned: the partition streams and their keys (`~orders:p:* ~{orders:p:*`; with a hash
 *   tag, `~{o}:eu:p:*`);
 * - a group rate limit: its budget key (`~orders:rate-limit:*`);
 * - `dedup` / `newerWins` on a stream with a hash tag: the records in the tag's slot
 *   (`~{o}:echo-dedup:{o}:eu:* ~{o}:echo-newest:{o}:eu:*`); without one they are `{orders}...`.
 */
export function consumerKeyPatterns(stream: string, features: readonly AclFeature[]): string[] {
  const tag = hashTagOf(stream);
  const patterns =
    tag === undefined
      ? [`~${stream}`, `~${stream}:dlq`, `~{${stream}}*`]
      : [`~${stream}`, `~${stream}:dlq`, `~${stream}:echo-*`];
  if (features.includes('partitions'))
    patterns.push(
      ...(tag === undefined ? [`~${stream}:p:*`, `~{${stream}:p:*`] : [`~${stream}:p:*`]),
    );
  if (features.includes('group-rate-limit')) patterns.push(`~${stream}:rate-limit:*`);
  if (features.includes('skips') && tag !== undefined)
    patterns.push(`~{${tag}}:echo-dedup:${stream}:*`, `~{${tag}}:echo-newest:${stream}:*`);
  return patterns;
}

/** The features of each stream of a run: the partitioned handler also skips duplicates. */
export function streamFeatures(
  streams: AclFeatureStreams,
  features: readonly AclFeature[],
): Array<{ stream: string; features: AclFeature[] }> {
  const out: Array<{ stream: string; features: AclFeature[] }> = [];
  if (features.includes('partitions'))
    out.push({ stream: streams.partitioned, features: ['partitions', 'skips'] });
  if (features.includes('group-rate-limit'))
    out.push({ stream: streams.limited, features: ['group-rate-limit'] });
  if (features.includes('skips')) out.push({ stream: streams.skipping, features: ['skips'] });
  return out;
}

/** The outcome of one run. */
export interface AclFeatureRun {
  stages: string[];
  failedStage?: string;
  /** warn/error lines of the app. */
  problems: string[];
  /** Denials in the server's ACL LOG for the user: `reason:object`. */
  denied: string[];
  /** Per stream: `totalDuplicates` and `totalStale` of its handler. */
  skipped: Map<string, { duplicates: number; stale: number }>;
  /** The ids each stream's handler ran, in order. */
  handled: Map<string, string[]>;
  logs: CaptureLogger;
}

/** A key of `count` partitions that routes to `partition`. */
function keyOfPartition(partition: number, count: number): string {
  for (let n = 0; ; n++) if (partitionOf(`k${n}`, count) === partition) return `k${n}`;
}

/**
 * Runs the handlers of `features` on `streams` with the app logged in as `user`/`password`;
 * `admin` (a default-user client) seeds the streams, publishes and reads the ACL LOG.
 */
export async function runAclFeatureScenario(
  server: RedisServer,
  admin: Redis,
  user: string,
  password: string,
  streams: AclFeatureStreams,
  features: readonly AclFeature[] = ACL_FEATURES,
  stageTimeoutMs = 8000,
): Promise<AclFeatureRun> {
  const handled = new Map<string, string[]>(
    Object.values(streams).map((stream) => [stream, [] as string[]]),
  );
  const ran = (stream: string, id: string) => void handled.get(stream)!.push(id);

  @Injectable()
  class FeatureHandlers {
    @StreamHandler(streams.partitioned, 'g', {
      partitions: PARTITIONS,
      dedup: true,
      blockMs: 2000,
      minIdleMs: 1000,
      claimIntervalMs: 200,
      // the cleanup within the run: a mark of life every 500 ms, a pass every 750 ms
      consumerCleanup: { idleMs: CLEANUP_IDLE_MS },
    })
    partitioned(message: StreamMessage<unknown>): void {
      ran(streams.partitioned, message.id);
    }

    @StreamHandler(streams.limited, 'g', {
      rateLimit: { max: 100, perMs: 1000, scope: 'group' },
      blockMs: 2000,
    })
    limited(message: StreamMessage<unknown>): void {
      ran(streams.limited, message.id);
    }

    @StreamHandler(streams.skipping, 'g', {
      dedup: true,
      newerWins: (m: StreamMessage<{ account: string }>) => m.payload.account,
      blockMs: 2000,
    })
    skipping(message: StreamMessage<unknown>): void {
      ran(streams.skipping, message.id);
    }
  }
  // only the handlers of `features` (one feature's rules are found with its handler alone)
  const keep = new Set(streamFeatures(streams, features).map((s) => s.stream));
  for (const [method, stream] of [
    ['partitioned', streams.partitioned],
    ['limited', streams.limited],
    ['skipping', streams.skipping],
  ] as const) {
    if (!keep.has(stream))
      delete (FeatureHandlers.prototype as unknown as Record<string, unknown>)[method];
  }

  @Module({ providers: [FeatureHandlers] })
  class FeatureModule {}

  await admin.acl('LOG', 'RESET');
  const publish = (stream: string, id: string, payload: unknown, key?: string) =>
    key === undefined
      ? admin.xadd(stream, '*', 'id', id, 'data', JSON.stringify(payload))
      : admin.xadd(stream, '*', 'id', id, 'data', JSON.stringify(payload), 'pkey', key);
  const keys = Array.from({ length: PARTITIONS }, (_, p) => keyOfPartition(p, PARTITIONS));
  // a dead peer's entry pending in partition 0: the owner that takes it claims it (XAUTOCLAIM)
  const peerEntry = brandedId();
  if (keep.has(streams.partitioned)) {
    const p0 = partitionStreamOf(streams.partitioned, 0);
    await admin.xgroup('CREATE', p0, 'g', '0', 'MKSTREAM');
    await publish(p0, peerEntry, {}, keys[0]);
    await admin.xreadgroup('GROUP', 'g', 'dead-peer', 'COUNT', 10, 'STREAMS', p0, '>');
  }

  const logs = new CaptureLogger();
  const stages: string[] = [];
  let failedStage: string | undefined;
  const skipped = new Map<string, { duplicates: number; stale: number }>();
  const app = await createEchoStreamApp(
    {
      connection: `redis://${user}:${encodeURIComponent(password)}@127.0.0.1:${server.port}`,
      consumerName: 'acl-consumer',
      shutdownTimeoutMs: 2000,
    },
    FeatureModule,
    logs,
  );
  try {
    // a refused bootstrap command (the stored partition count) fails the init: a stage like any
    await app.init().catch((err: unknown) => {
      throw new Error(`init: ${err instanceof Error ? err.message : String(err)}`);
    });
    const ids = {
      parts: keys.map(() => brandedId()),
      limited: [brandedId(), brandedId(), brandedId()],
      once: brandedId(),
      older: brandedId(),
      newer: brandedId(),
    };
    const expected = new Map<string, string[]>();
    if (keep.has(streams.partitioned)) {
      for (const [p, key] of keys.entries())
        await publish(partitionStreamOf(streams.partitioned, p), ids.parts[p], {}, key);
      expected.set(streams.partitioned, [peerEntry, ...ids.parts]);
    }
    if (keep.has(streams.limited)) {
      for (const id of ids.limited) await publish(streams.limited, id, {});
      expected.set(streams.limited, ids.limited);
    }
    if (keep.has(streams.skipping)) {
      await publish(streams.skipping, ids.once, { account: 'a' });
      await publish(streams.skipping, ids.newer, { account: 'b' });
      expected.set(streams.skipping, [ids.once, ids.newer]);
    }
    const pendingStreams = [...keep].flatMap((stream) =>
      stream === streams.partitioned
        ? Array.from({ length: PARTITIONS }, (_, p) => partitionStreamOf(stream, p))
        : [stream],
    );
    const nothingPending = async () => {
      for (const stream of pendingStreams)
        if ((await pendingCount(admin, stream, 'g')) !== 0) return false;
      return true;
    };
    const allHandled = () =>
      [...expected].every(([stream, want]) =>
        want.every((id) => handled.get(stream)!.includes(id)),
      );
    const stats = app.get(ConsumerStats);
    const checks: Array<[string, () => Promise<boolean> | boolean]> = [
      ['handled', allHandled],
      ['nothing pending', nothingPending],
      [
        // the records of the acked entries skip a copy and an older entry of the same account
        'skipped',
        async () => {
          if (keep.has(streams.partitioned))
            await publish(
              partitionStreamOf(streams.partitioned, 1),
              ids.parts[1],
              { copy: true },
              keys[1],
            );
          if (keep.has(streams.skipping)) {
            await publish(streams.skipping, ids.once, { account: 'a', copy: true });
            await publish(streams.skipping, ids.older, { account: 'b' });
          }
          return true;
        },
      ],
      [
        'skips counted',
        () =>
          (!keep.has(streams.partitioned) ||
            stats.get(streams.partitioned, 'g')?.totalDuplicates === 1) &&
          (!keep.has(streams.skipping) ||
            (stats.get(streams.skipping, 'g')?.totalDuplicates === 1 &&
              stats.get(streams.skipping, 'g')?.totalStale === 1)),
      ],
      ['nothing pending after the skips', nothingPending],
      [
        // the cleanup deletes the dead peer (idle, its entry taken over) from partition 0
        'idle peer deleted',
        async () =>
          !keep.has(streams.partitioned) ||
          !(
            (await admin.xinfo(
              'CONSUMERS',
              partitionStreamOf(streams.partitioned, 0),
              'g',
            )) as string[][]
          ).some((consumer) => consumer.includes('dead-peer')),
      ],
    ];
    for (const [stage, check] of checks) {
      try {
        await waitFor(check, { timeoutMs: stageTimeoutMs, message: stage });
        stages.push(stage);
      } catch {
        failedStage = stage;
        break;
      }
    }
    for (const stream of keep) {
      const snapshot = stats.get(stream, 'g');
      skipped.set(stream, {
        duplicates: snapshot?.totalDuplicates ?? -1,
        stale: snapshot?.totalStale ?? -1,
      });
    }
    await sleep(300); // a heartbeat of the leases and a pending probe or two
  } catch (err) {
    if (!(err instanceof Error && err.message.startsWith('init: '))) throw err;
    failedStage = err.message;
  } finally {
    await app.close();
  }
  return {
    stages,
    failedStage,
    problems: logs.lines.filter((line) => /^(warn|error) /.test(line)),
    denied: await aclDenials(admin, user),
    skipped,
    handled,
    logs,
  };
}
