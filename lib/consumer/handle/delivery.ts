import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { RawEntry } from '../../redis/stream-roles';
import type { HeldKeys } from '../order';
import type { AckBuffer, AckRecordSource, Settlement } from '../settle';
import type { Checkpoints } from './checkpoints';
import type {
  EntryTracing,
  FailedEntry,
  HandleOutcome,
  HandlingBatch,
  ClaimedBatch,
  LoopContext,
} from '../context';
import {
  LOOK_UP_READS_AHEAD,
  readCounts,
  triage,
  type TriagedRead,
  type TriageRules,
} from '../read';
import type { HandlerRunner } from './handler-runner';
import type { Heartbeat, LoopHealth, SweepPace } from '../health';
import type { StartLimiter } from '../limits';
import type { RetryScheduler } from '../retry';
import type { SkipCheck, SkipLookUp } from '../skip';
import { NO_TRANSACTION, type LoopTransactions } from '../commit';

/** What handing a read to the handler needs besides the context. */
export interface DeliveryParts {
  readonly runner: Pick<HandlerRunner, 'run'>;
  /** Partitions: the keys whose failed entry waits for its retry (absent: none). */
  readonly heldKeys?: Pick<HeldKeys, 'reading'>;
  readonly settlement: Pick<
    Settlement,
    'uncharge' | 'deleted' | 'deadLetter' | 'rejected' | 'failed' | 'release'
  >;
  readonly acks: Pick<AckBuffer, 'add'>;
  /** Redeliveries' `checkpoint`, and what a message's `saveCheckpoint` calls. */
  readonly checkpoints: Pick<Checkpoints, 'attach' | 'save'>;
  readonly limiter: Pick<StartLimiter, 'confirm'>;
  /** The retries waiting for their delay: a read of the own PEL skips them. */
  readonly waitingRetries: Pick<RetryScheduler, 'has'>;
  readonly pace: Pick<SweepPace, 'delivered'>;
  readonly heartbeat: Pick<Heartbeat, 'hold' | 'drop'>;
  readonly health: Pick<LoopHealth, 'drainNeeded'>;
  /** Trace spans around handler calls; absent: none. */
  readonly tracing?: EntryTracing;
  /** `dedup` / `newerWins`: the entries acked without a handler call; absent: none. */
  readonly skips?: SkipCheck;
  /**
   * What is written with the handled entries' XACKs: `dedup` / `newerWins` records, the writes of
   * `exactlyOnce` entries (`CommitQueue`); absent: none.
   */
  readonly records?: Pick<AckRecordSource, 'handled'>;
  /** `exactlyOnce`: each message's `tx`; absent: one that refuses ({@link NO_TRANSACTION}). */
  readonly transactions?: Pick<LoopTransactions, 'of'>;
}

/** The batch in a handler now, with the delivery counts of its read. */
export interface InHand {
  readonly batch: HandlingBatch;
  /** The messages of the batch (the records of those that finish are written with their ack). */
  readonly messages: readonly StreamMessage<unknown>[];
  /** Delivery counts after its read (`null`: a fresh read, all 1). */
  readonly counts: ReadonlyMap<string, number> | null;
}

/** How many prepared reads are kept: the one taken and those sent ahead after it. */
const PREPARED_KEPT = 1 + LOOK_UP_READS_AHEAD;

/** A read sent ahead, sorted and its skip look-up made when it landed ({@link Delivery.prepare}). */
interface PreparedRead {
  readonly entries: readonly RawEntry[];
  readonly read: TriagedRead;
  readonly lookUp: SkipLookUp;
}

/**
 * Handles one read and settles it: the read is sorted ({@link triage}); deleted entries are acked,
 * undecodable ones and poison pills go to the dead-letter path, the rest to the handler. Handled
 * entries join the pending acks, failures go to the retry policy, entries not started because of
 * shutdown are released to peers.
 */
export class Delivery {
  private current: InHand | null = null;
  /**
   * Reads sent ahead and prepared, until they are handled: the one taken now and those sent after
   * it, whose replies land before the one taken is handled.
   */
  private readonly prepared: PreparedRead[] = [];
  /** How reads are sorted (one object for every read of the loop). */
  private readonly rules: TriageRules;

  constructor(
    private readonly context: LoopContext,
    private readonly parts: DeliveryParts,
  ) {
    const { stream, group, consumer, options, signal } = context;
    const { waitingRetries, checkpoints } = parts;
    const transactions = parts.transactions;
    this.rules = {
      stream,
      group,
      consumer,
      codec: options.codec,
      maxDeliveries: options.maxDeliveries,
      signal,
      isWaitingRetry: (id) => waitingRetries.has(id),
      saveCheckpoint: (entryId, value) => checkpoints.save(entryId, value),
      transactionOf: transactions
        ? (id, entryId, deliveries) => transactions.of(id, entryId, deliveries)
        : () => NO_TRANSACTION,
      partition: context.partition,
    };
  }

  /** The batch in a handler now, if any (a stop that gives up settles it). */
  get inHand(): InHand | null {
    return this.current;
  }

  /**
   * The reply of a read sent ahead landed (`ReadAhead`): with `dedup` / `newerWins` it is sorted
   * and its records looked up now (one MGET), as early as the process reads the reply
   * (docs/delivery.md "Duplicates and stale replays"). `process` of the same entries uses both.
   * Without them: nothing.
   */
  prepare(entries: readonly RawEntry[]): void {
    const { skips } = this.parts;
    if (skips === undefined || entries.length === 0) return;
    try {
      // a fresh read (`>`): first deliveries, but those it claimed along (their counts with them)
      const read = triage(entries, null, this.rules);
      this.prepared.push({ entries, read, lookUp: skips.lookUp(read.fresh) });
    } catch {
      // nothing prepared: `process` sorts the read and looks it up, and says what failed
    }
    // one never handled (released at a stop) makes way
    if (this.prepared.length > PREPARED_KEPT) this.prepared.shift()?.lookUp.drop();
  }

  /**
   * Handles and settles `entries`; `counts`: their delivery counts (`null`: a fresh read);
   * `window`: the rate-limit window of the starts their read took (`StartLimiter.take`), so a
   * batch that starts in a later window takes starts of that window first.
   */
  async process(
    entries: readonly RawEntry[],
    counts: Map<string, number> | null,
    window?: number,
  ): Promise<void> {
    this.context.counters.read(entries.length);
    if (entries.length > 0) this.parts.pace.delivered();
    try {
      await this.deliver(entries, counts, window);
    } catch (err) {
      // entries of this read may sit unsettled in the own PEL: read it again once Redis is back
      this.parts.health.drainNeeded();
      throw err;
    }
  }

  private async deliver(
    entries: readonly RawEntry[],
    counts: Map<string, number> | null,
    window: number | undefined,
  ): Promise<void> {
    const { settlement, tracing, skips } = this.parts;
    const prepared = this.takePrepared(entries, counts);
    // entries a fresh read claimed along (CLAIM) carry their counts: settled as a reclaim's
    counts ??= readCounts(entries);
    const read = prepared?.read ?? triage(entries, counts, this.rules);
    let messages = await this.parts.checkpoints.attach(read.fresh);
    let fields = read.freshFields;
    if (skips !== undefined && messages.length > 0) {
      const all = messages;
      const lookUp = prepared?.lookUp ?? skips.lookUp(all);
      const { run, skipped } = await lookUp.verdicts();
      if (skipped.length > 0) {
        this.parts.acks.add(skipped);
        messages = run.map((i) => all[i]);
        fields = run.map((i) => read.freshFields[i]);
      }
    } else prepared?.lookUp.drop(); // nothing fresh: its look-up keeps nothing waiting
    if (tracing !== undefined)
      for (let i = 0; i < messages.length; i++) tracing.remember(messages[i], fields[i]);
    if (read.waitingRetries.length > 0 && counts)
      await settlement.uncharge(read.waitingRetries, counts);
    if (read.deleted.length > 0) await settlement.deleted(read.deleted);
    if (read.undecodable.length > 0) await settlement.deadLetter(read.undecodable, 'decode_error');
    if (read.poison.length > 0) await settlement.deadLetter(read.poison, 'max_deliveries');
    if (messages.length === 0) return;

    // the window the batch's starts belong to once confirmed (a late start takes a fresh one)
    const startsWindow = await this.parts.limiter.confirm(messages.length, window);
    this.parts.heldKeys?.reading(entries, counts);
    // a read that reached the loop after stop() gave up (a shared read's round ended late) was
    // never in hand there: it starts nothing, and is settled (released) here as any unstarted
    const lateRead = this.context.isAbandoned();
    const outcome = await this.handle(messages, counts, startsWindow);
    // stop() gave up waiting: it settled this batch already and closed the connection
    if (this.context.isAbandoned() && !lateRead) return;
    await this.settle(messages, outcome, entries, counts);
  }

  /** The prepared read of `entries` (a fresh read), if it is the one prepared; else `null`. */
  private takePrepared(
    entries: readonly RawEntry[],
    counts: ReadonlyMap<string, number> | null,
  ): PreparedRead | null {
    if (counts !== null) return null;
    const at = this.prepared.findIndex((prepared) => prepared.entries === entries);
    return at < 0 ? null : this.prepared.splice(at, 1)[0];
  }

  /**
   * Runs the entries of a held key's lane (partitions, `HeldKeys`: one key, in stream order; its
   * entries are kept claimed by the lane) and settles them as a read's. Its starts share the
   * loop's `concurrency` and rate limit with the batch (`KeyLaneRunner`).
   */
  async processHeld(
    messages: StreamMessage<unknown>[],
    entries: readonly RawEntry[],
    counts: ReadonlyMap<string, number>,
  ): Promise<void> {
    const ids = messages.map((m) => m.entryId);
    const batch = new BatchInHand(ids, { touchedAt: this.context.now() });
    const outcome = await this.parts.runner.run(messages, batch, true);
    if (this.context.isAbandoned()) return;
    try {
      await this.settle(messages, outcome, entries, counts);
    } catch (err) {
      // entries of the lane may sit unsettled in the own PEL: read it again once Redis is back
      this.parts.health.drainNeeded();
      throw err;
    }
  }

  private async settle(
    messages: readonly StreamMessage<unknown>[],
    outcome: HandleOutcome,
    entries: readonly RawEntry[],
    counts: ReadonlyMap<string, number> | null,
  ): Promise<void> {
    const { settlement } = this.parts;
    this.parts.records?.handled(messages, outcome.ok);
    this.parts.acks.add(outcome.ok);
    if (outcome.rejected) await settlement.rejected(outcome.rejected, entries);
    if (outcome.failed.length > 0) await settlement.failed(outcome.failed, entries);
    await settlement.release(outcome.unstarted, counts, 'unstarted');
    // keyed lanes: an XACK failed and entries were left pending; the backoff and drain follow
    if (outcome.ackFailure) throw outcome.ackFailure.error;
  }

  private async handle(
    messages: StreamMessage<unknown>[],
    counts: ReadonlyMap<string, number> | null,
    startsWindow: number | undefined,
  ): Promise<HandleOutcome> {
    const { heartbeat } = this.parts;
    const ids = messages.map((m) => m.entryId);
    // the whole batch stays claimed until it is settled: an entry whose handler returned waits for
    // the batch's XACK, one that threw for its retry, one a guard rejected for the dead-letter path
    const batch = new BatchInHand(
      ids,
      heartbeat.hold('inHand', () => ids),
      startsWindow,
    );
    this.current = { batch, messages, counts };
    try {
      return await this.parts.runner.run(messages, batch);
    } finally {
      this.current = null;
      heartbeat.drop('inHand');
    }
  }
}

/**
 * The batch in a handler: what started and how each entry settled. Its clock is that of its held
 * entries (the heartbeat moves it). A class, so every batch has the same shape.
 */
class BatchInHand implements HandlingBatch {
  readonly unsettled: Set<string>;
  readonly started = new Set<string>();
  readonly ok: string[] = [];
  readonly failed: FailedEntry[] = [];

  constructor(
    readonly ids: readonly string[],
    private readonly claim: ClaimedBatch,
    readonly startsWindow?: number,
  ) {
    this.unsettled = new Set(ids);
  }

  get touchedAt(): number {
    return this.claim.touchedAt;
  }
}
