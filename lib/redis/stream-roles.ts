/**
 * What the rest of the library may ask of Redis, by role. Callers outside lib/redis depend on
 * these interfaces (or on `StreamsClient`, their union), never on an ioredis connection: the
 * consumer engine needs `LoopCommands` and `BlockingReads`, the producer `StreamWrites` and
 * `DurableWrites`, the admin, stats, dashboard and CLI `StreamQueries`. A leaf: it imports types
 * only, so unit tests hand any role a small fake and the engine loads no driver through it.
 */
import type { ConnectionMonitor } from './connection/connection-monitor';
import type { RawEntry } from './connection/reply-shapes';

export type { RawEntry } from './connection/reply-shapes';
export type { ConnectionMonitor } from './connection/connection-monitor';
import type { PartitionLeases, PendingProbes } from './partitions/partition-roles';
import type { AlongAck, EntryDeletions, SkipRecords } from './loop/ack-roles';
import type { ServerFeatureReport } from '../interfaces/redis-server.interface';
import type { EntryCommits } from './loop/commit-roles';
import type { TransactionOutboxes } from './publish/outbox-roles';
export type {
  Browsing,
  StreamBrowsing,
  StreamCounters,
  StreamKeysPage,
} from './operator/browsing-roles';
export type {
  AlongAck,
  DeletionSweep,
  EntryDeletions,
  SkipQuery,
  SkipRecord,
  SkipRecords,
} from './loop/ack-roles';
export type { CommitVerdict, CommitWrite, EntryCommit, EntryCommits } from './loop/commit-roles';
export type { MalformedOutboxItem, OutboxItem, TransactionOutboxes } from './publish/outbox-roles';
export type {
  LeaseRow,
  LeaseView,
  PartitionLeases,
  PendingProbeRow,
  PendingProbes,
} from './partitions/partition-roles';

/** One row of XPENDING's extended form. */
export interface PendingRow {
  entryId: string;
  consumer: string;
  idleMs: number;
  deliveries: number;
}

/** One page of XAUTOCLAIM. */
export interface AutoClaimPage {
  /** The cursor for the next call; `'0-0'` once the whole PEL was scanned. */
  cursor: string;
  entries: RawEntry[];
  /** Ids that were pending but no longer exist in the stream (Redis 7); Redis removed them from the PEL. */
  deletedIds: string[];
}

/** A query of the group's PEL. */
export interface PendingQuery {
  /** Only entries idle at least this long (the IDLE filter, Redis >= 6.2). */
  minIdleMs?: number;
  /** Range start, inclusive (`'-'`) or exclusive (`'(1-0'`). */
  start: string;
  end: string;
  count: number;
  consumer?: string;
}

/** Summary of one group (XINFO GROUPS). */
export interface GroupInfo {
  name: string;
  pending: number;
  lag: number | null;
  lastDeliveredId: string;
}

/** One consumer of a group (XINFO CONSUMERS). */
export interface ConsumerInfo {
  name: string;
  pending: number;
  idleMs: number;
}

/** What one refill of a group's rate budget granted. */
export interface RateBudgetGrant {
  /** Starts granted (0..want). */
  granted: number;
  /** Ms until the window of the grant ends (the server's clock). */
  windowLeftMs: number;
}

/** One XADD of a write pipeline. */
export interface WriteItem {
  stream: string;
  fields: readonly string[];
  maxLen?: number;
}

/** What `DurableWrites.addReplicated` wrote and what its WAIT answered. */
export interface ReplicatedWrite {
  /** The entry ids written, one per item, in order: these entries ARE on the master. */
  entryIds: string[];
  /**
   * Replicas that acknowledged the writes (WAIT's answer); on a Cluster with several slots, the
   * lowest answer of their pipelines. 0 when WAIT itself failed (`waitError`).
   */
  acknowledged: number;
  /** WAIT's reply error (an ACL without `+wait`, ...), the writes being done. */
  waitError?: Error;
}

/** The commands a consumer loop sends about its group's entries (everything but the reads). */
export interface LoopCommands {
  /** XGROUP CREATE ... MKSTREAM; `false` when the group already existed (BUSYGROUP). */
  createGroup(stream: string, group: string, startId: string): Promise<boolean>;
  /**
   * XACK of `ids`; `along`: writes about acked entries sent right behind it, in the same round
   * trip (a checkpoint dropped, ...).
   */
  ack(
    stream: string,
    group: string,
    ids: readonly string[],
    along?: readonly AlongAck[],
  ): Promise<number>;
  autoClaim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    cursor: string,
    count: number,
  ): Promise<AutoClaimPage>;
  /**
   * `XAUTOCLAIM ... 0 <cursor> COUNT <count> JUSTID`: one page of the group's pending entries,
   * whoever holds them, made this consumer's without a delivery (JUSTID leaves the delivery count
   * as it is; the read that then hands them to the handler counts one). A partition's new owner
   * takes its last owner's entries this way (docs/partitions.md "Order").
   */
  takeOver(
    stream: string,
    group: string,
    consumer: string,
    cursor: string,
    count: number,
  ): Promise<{ cursor: string; ids: string[] }>;
  pending(stream: string, group: string, query: PendingQuery): Promise<PendingRow[]>;
  /** XPENDING's summary form: how many entries the group's PEL holds (all consumers). */
  pendingCount(stream: string, group: string): Promise<number>;
  /** XCLAIM with a min idle time, returning the bodies of the entries this call won. */
  claim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    ids: readonly string[],
  ): Promise<RawEntry[]>;
  /**
   * XCLAIM ... JUSTID of the entries the group's PEL still names this consumer as the owner of:
   * resets their idle time (no delivery bump), never taking an entry from a peer. Returns the ids
   * it did not touch (a peer took them over while this consumer was frozen, or they were acked).
   */
  touch(stream: string, group: string, consumer: string, ids: readonly string[]): Promise<string[]>;
  /**
   * XCLAIM (with bodies, one more delivery) of the entries the group's PEL still names this
   * consumer as the owner of (its waiting retries); `lost`: the ids it did not claim.
   */
  reclaim(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
  ): Promise<{ entries: RawEntry[]; lost: string[] }>;
  /**
   * XCLAIM ... IDLE ms RETRYCOUNT n JUSTID: marks entries as idle for `idleMs`, so peers reclaim
   * them at once, and sets each one's delivery count to `deliveries[i]` (the count it had before
   * the read that never reached a handler). Without `deliveries` the counts are kept (a waiting
   * retry, whose failed attempt was a real delivery). Only entries the group's PEL still names this
   * consumer as the owner of: one a peer took over is left as it is.
   */
  release(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
    idleMs: number,
    deliveries?: readonly number[],
  ): Promise<void>;
  /**
   * Takes up to `want` handler starts from the group's budget of `max` per `perMs` window, in one
   * atomic script call (`rateLimit: { scope: 'group' }`).
   */
  takeRateBudget?(
    stream: string,
    group: string,
    max: number,
    perMs: number,
    want: number,
  ): Promise<RateBudgetGrant>;
  /**
   * Runs `send`, whose commands on this connection leave in one socket write when it returns
   * (keyed lanes: the XACKs of many loops in one event-loop turn). Absent (a test fake): `send`
   * just runs.
   */
  together?(send: () => void): void;
  /** See {@link SkipRecords.ackRecording} (`dedup`, `newerWins`). */
  ackRecording?: SkipRecords['ackRecording'];
  /** See {@link SkipRecords.readRecords} (`dedup`, `newerWins`). */
  readRecords?: SkipRecords['readRecords'];
}

/**
 * How late past its BLOCK a parked read's reply may come before the link is taken for half-open
 * and replaced: `max(1000, blockMs)` (docs/delivery.md "The loop", step 6). A slow server or a
 * short write pause (a manual failover) is ridden out within it.
 */
export function stallMarginMs(blockMs: number): number {
  return Math.max(1000, blockMs);
}

/**
 * XREADGROUP, parked on the server or not, and the wake-up of a parked read. A parked read holds
 * its connection: a client serving these serves one loop (or one shared read) only.
 */
export interface BlockingReads {
  /**
   * XREADGROUP. With `blockMs` the read parks on the server; a reply that does not come within
   * `blockMs` + `marginMs` means a dead link: the connection is replaced and the call rejects.
   * @param marginMs how late the reply may be; default {@link stallMarginMs}(`blockMs`). A loop
   *   whose park is cut short (a sweep or a retry due sooner) passes the margin of its handler's
   *   `blockMs`, so a server stall it rides out does not depend on when the park began.
   * @param claimIdleMs a read of new entries (`>`) also claims the group's entries idle this long
   *   (`CLAIM`, Redis >= 8.4; ignored elsewhere): they come first, each with its `deliveries`.
   */
  readGroup(
    stream: string,
    group: string,
    consumer: string,
    count: number,
    id: string,
    blockMs?: number,
    marginMs?: number,
    claimIdleMs?: number,
  ): Promise<RawEntry[]>;
  /**
   * One XREADGROUP of new entries (`>`) on several streams of one group (a shared read): parked
   * up to `blockMs` like `readGroup`, without BLOCK when `blockMs` is undefined. Entries by
   * stream; streams that got nothing are absent. `interruptRead` wakes it like a one-stream read;
   * where it cannot (CLIENT ID refused by an ACL) the read parks at most `uninterruptibleMs`.
   * `marginMs` and `claimIdleMs` as for `readGroup`.
   */
  readGroups(
    group: string,
    consumer: string,
    count: number,
    streams: readonly string[],
    blockMs?: number,
    uninterruptibleMs?: number,
    marginMs?: number,
    claimIdleMs?: number,
  ): Promise<Map<string, RawEntry[]>>;
  /**
   * Wakes a parked `readGroup` (it resolves with no entries): CLIENT UNBLOCK, else (denied by an
   * ACL, no control connection) by dropping the connection when `mayDrop` (a stop), never for a
   * mere wake-up (a due retry then waits for the read's BLOCK timeout).
   * @default mayDrop true
   */
  interruptRead(mayDrop?: boolean): Promise<void>;
}

/** Appending to and deleting from streams. */
export interface StreamWrites {
  /** XADD; `maxLen` trims approximately (`MAXLEN ~`). */
  add(stream: string, fields: readonly string[], maxLen?: number): Promise<string>;
  /** Pipelined XADDs; one entry id per call, in order. */
  addMany(items: readonly WriteItem[]): Promise<string[]>;
  /** XDEL; how many of `ids` existed. */
  remove(stream: string, ids: readonly string[]): Promise<number>;
}

/**
 * The expiry of a key (the reply streams of the microservices transport, which go away with an idle
 * client). Not part of `StreamsClient`: only `RedisStreamsClient` has it.
 */
export interface KeyExpiry {
  /** PEXPIRE `key` `ttlMs`; `false` when the key does not exist. */
  expire(key: string, ttlMs: number): Promise<boolean>;
}

/** XADDs that wait for replicas (`publish(..., { replicas })`). */
export interface DurableWrites {
  /**
   * XADDs followed by `WAIT replicas timeoutMs` as the LAST command of the same pipeline; on a
   * Cluster one pipeline per slot, each ending with its own WAIT on the master of its slot. An
   * XADD's reply error rejects as `addMany` does; WAIT's answer (or its reply error) is
   * returned, never thrown: the entries are written by then.
   */
  addReplicated(
    items: readonly WriteItem[],
    replicas: number,
    timeoutMs: number,
  ): Promise<ReplicatedWrite>;
}

/** Read-only questions about streams, groups and the server. */
export interface StreamQueries {
  /** XRANGE with COUNT (bounds as XRANGE takes them: `-`, `+`, `(id`, `ms`, `ms-seq`). */
  range(stream: string, start: string, end: string, count: number): Promise<RawEntry[]>;
  length(stream: string): Promise<number>;
  /** XINFO GROUPS; `[]` when the stream does not exist. */
  groups(stream: string): Promise<GroupInfo[]>;
  consumers(stream: string, group: string): Promise<ConsumerInfo[]>;
  /** CONFIG GET of one parameter; `null` when not readable (ACL, managed service). */
  config(parameter: string): Promise<string | null>;
}

/**
 * The pause switch of a group on a stream (docs/operations.md "Pausing a group"): persistent, one
 * key per stream and group in the stream's hash slot.
 */
export interface GroupPauses {
  /** Pauses `group` on `stream` (SET), recording `at` (ms since the epoch). */
  pause(stream: string, group: string, at: number): Promise<void>;
  /** Resumes it (DEL); `false` when it was not paused. */
  resume(stream: string, group: string): Promise<boolean>;
  /**
   * When each group was paused on its stream (`null`: not paused), in one MGET per hash slot.
   */
  pausedSince(targets: readonly PauseTarget[]): Promise<(number | null)[]>;
}

/**
 * Checkpoints of entries (docs/delivery.md "Checkpoints"): a JSON value per entry a group works on,
 * one hash per stream and group in the stream's hash slot.
 */
export interface EntryCheckpoints {
  /** HSET of the entry's checkpoint. */
  save(stream: string, group: string, entryId: string, json: string): Promise<void>;
  /** HMGET of the entries' checkpoints (`null`: none), one round trip. */
  read(stream: string, group: string, entryIds: readonly string[]): Promise<(string | null)[]>;
}

/** A group on a stream, whose pause flag is read. */
export interface PauseTarget {
  readonly stream: string;
  readonly group: string;
}

/** Stops a listener (`void`: the source keeps none, nothing to stop). */
export type Unlisten = (() => void) | void;

/** The client's own connection: its state, its reconnects, its end. */
export interface ClientLink {
  /**
   * Calls `listener` each time the connection is (re)established and ready; returns what stops
   * it (a loop that stops on a shared connection must not stay listening).
   */
  onReconnect?(listener: () => void): Unlisten;
  /**
   * Calls `listener` each time a Cluster's slot map changed (a replica promoted, a slot moved);
   * never on one node. Returns what stops it.
   */
  onTopologyChange?(listener: () => void): Unlisten;
  /** Why the connection is down, if it is; lets a caller wait for it instead of queueing. */
  readonly link?: ConnectionMonitor;
  close(): Promise<void>;
}

/**
 * Everything the consumer engine, the producer and the admin ask of Redis: the union of the
 * roles. The engine depends on this interface (or one role of it) only, so unit tests can hand it
 * a small fake.
 */
export interface StreamsClient
  extends LoopCommands, BlockingReads, StreamWrites, StreamQueries, ClientLink {
  /** The group's pause switch; a client without it (a test fake) is never paused. */
  readonly pauses?: GroupPauses;
  /** Checkpoints of entries; a client without it (a test fake) saves none. */
  readonly checkpoints?: EntryCheckpoints;
  /** Partition counts and leases (docs/partitions.md); a client without it cannot partition. */
  readonly partitions?: PartitionLeases;
  /** Many PELs in one script call (partition loops); without it each loop sweeps on its own. */
  readonly pendingProbes?: PendingProbes;
  /** Exactly-once commits (`exactlyOnce`); a client without them cannot run such a handler. */
  readonly commits?: EntryCommits;
  /** The outboxes of exactly-once publishes to other Cluster slots; without them: none forwarded. */
  readonly outboxes?: TransactionOutboxes;
  /** `deleteOnAck: 'acked-by-all'`: the sweep of entries every group acknowledged. */
  readonly deletions?: EntryDeletions;
  /** The newer server's verbs this connection's server answers and those in use (asked once). */
  serverFeatures?(): Promise<ServerFeatureReport>;
}
