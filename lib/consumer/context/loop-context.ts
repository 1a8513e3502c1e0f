import type { ConsumerState } from '../../interfaces/consumer-snapshot.interface';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { ResolvedHandlerOptions } from '../../config/handler-definitions';
import type { ConsumerLogger } from './consumer-config';
import type { OwnedPartition } from './owned-partition';

/**
 * Types the loop's collaborators share. A leaf: it imports no class of this folder, so no two
 * collaborators import each other for a type.
 */

/** How the loop's collaborators update the loop's figures (`ConsumerCounters` keeps them). */
export interface LoopCounters {
  /** Entries came in from a read (new, own PEL, reclaim, a due retry). */
  read(count: number): void;
  acked(count: number): void;
  /** Pending entries found deleted from the stream, acked with nothing to handle. */
  deleted(count: number): void;
  /** Entries acked without a handler call: a duplicate (`dedup`) or stale (`newerWins`). */
  skipped(reason: 'duplicate' | 'stale', count: number): void;
  /** `exactlyOnce` entries whose commit was refused by its fence (another consumer's now). */
  fenced(count: number): void;
  /** Entries acked at the end of the dead-letter path. */
  deadLettered(count: number): void;
  /** A handler threw (or a batch handler returned no usable acks). */
  handlerFailed(errorText: string): void;
  /** The last error seen by the loop (Redis, the dead-letter path), for stats. */
  errorSeen(errorText: string): void;
  /** A failed entry now waits for its retry. */
  retryScheduled(): void;
  /** How many failed entries wait for their retry in the retry scheduler now. */
  retriesWaiting(count: number): void;
  /** How many failed entries of held keys (a partition loop) wait for their retry now. */
  heldRetriesWaiting(count: number): void;
  setState(state: ConsumerState): void;
}

/**
 * A collaborator that runs on its own timer beside the loop's beat (an outbox forwarder, the
 * sweep of `deleteOnAck`): started with the loop, stopped once its last acks are in.
 */
export interface BesideBeat {
  start(): void;
  /** Never throws. */
  stop(): Promise<void>;
}

/**
 * The one context every collaborator of a loop is built from: where it runs, how it logs, its
 * clock and counters, and whether it is stopping.
 */
export interface LoopContext {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  /** `'Class.method'`. */
  readonly handlerName: string;
  /** `'Class.method on stream/group'`, for logs. */
  readonly where: string;
  readonly options: ResolvedHandlerOptions;
  readonly logger: ConsumerLogger;
  readonly counters: LoopCounters;
  /** Aborted when the loop is asked to stop; handed to every message. */
  readonly signal: AbortSignal;
  now(): number;
  /** True once `stop()` was called: no new reads, no entry starts down the dead-letter path. */
  isStopping(): boolean;
  /** True once `stop()` gave up waiting and settled the batch in hand itself. */
  isAbandoned(): boolean;
  /** A partition of a partitioned stream: its index and the loop's lease generation. */
  readonly partition?: OwnedPartition;
}

/** Entries the heartbeat keeps claimed: when it last claimed or touched them. */
export interface ClaimedBatch {
  readonly touchedAt: number;
}

/** The batch in a handler: what started and how each settled, so a timed-out stop can settle it. */
export interface HandlingBatch extends ClaimedBatch {
  /**
   * Every entry of the batch: all stay ours until the batch is settled (acked, retried or
   * dead-lettered after it), so the heartbeat keeps all of them claimed, not only the unsettled.
   */
  readonly ids: readonly string[];
  unsettled: Set<string>;
  started: Set<string>;
  ok: string[];
  /** Per-entry mode: entries whose handler threw, in the order they failed. */
  failed: FailedEntry[];
  /**
   * The rate-limit window of the starts the batch's read took (`StartLimiter.take`); an entry that
   * begins after it ended takes a start of the current one. Absent: a held key's lane, whose every
   * attempt takes its own start.
   */
  readonly startsWindow?: number;
}

/** A handler failure: the message and what was thrown (`undefined`: a batch entry not returned). */
export interface FailedEntry {
  message: StreamMessage<unknown>;
  error: unknown;
  /** When this consumer last claimed or touched the entry (for the heartbeat). */
  claimedAt: number;
  /** When the handler failed: the retry delay counts from here, not from the end of the batch. */
  failedAt: number;
}

/** Verdicts of one handled batch. */
export interface HandleOutcome {
  ok: string[];
  unstarted: string[];
  /** Entries that failed (thrown, or in batch mode not returned for ack), for the retry policy. */
  failed: FailedEntry[];
  /** Entries refused by a guard or pipe (`EntryRejectedError`): dead-lettered at once. */
  rejected?: RejectedEntry[];
  /**
   * Keyed lanes: the XACK a key waited for failed, so entries were left pending unstarted (the
   * own PEL drain runs them); thrown once the rest is settled, for the loop's backoff.
   */
  ackFailure?: { error: unknown };
}

/** An entry the handler's pipeline refused, with the refusal's text. */
export interface RejectedEntry {
  entryId: string;
  attempts: number;
  error: string;
}

/** An entry on its way out of the hot path. */
export interface DeadLetterCandidate {
  entryId: string;
  fields: readonly string[];
  attempts: number;
  /** Decode error text, or the last handler error seen for the entry. */
  error: string | undefined;
}

/** The last handler error of each entry, kept for its dead letter until the entry is acked. */
export interface HandlerErrors {
  lastErrorOf(entryId: string): string | undefined;
  /** Forgets the errors of entries that were acked. */
  forget(entryIds: readonly string[]): void;
}
