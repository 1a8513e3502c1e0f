import type { StreamMessage } from '../interfaces/stream-message.interface';
import type { RawEntry } from '../redis/stream-roles';
import type { HeldKeys } from './held-keys';
import type { AckBuffer } from './ack-buffer';
import type { AckRecordSource } from './ack-records';
import type { Checkpoints } from './checkpoints';
import type { EntryTracing } from './consumer.types';
import { triage, type TriageRules } from './entry-triage';
import type { HandlerRunner } from './handler-runner';
import type { Heartbeat } from './heartbeat';
import type { LoopHealth } from './loop-health';
import type {
  FailedEntry,
  HandleOutcome,
  HandlingBatch,
  HeldBatch,
  LoopContext,
} from './loop.types';
import type { StartLimiter } from './rate-limiter';
import type { RetryScheduler } from './retry-scheduler';
import type { Settlement } from './settlement';
import type { SkipCheck } from './skip-filter';
import type { SweepPace } from './sweep-pace';

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
  readonly retries: Pick<RetryScheduler, 'has'>;
  readonly pace: Pick<SweepPace, 'delivered'>;
  readonly heartbeat: Pick<Heartbeat, 'hold' | 'drop'>;
  readonly health: Pick<LoopHealth, 'drainNeeded'>;
  /** Trace spans around handler calls; absent: none. */
  readonly tracing?: EntryTracing;
  /** `dedup` / `newerWins`: the entries acked without a handler call; absent: none. */
  readonly skips?: SkipCheck;
  /** `dedup` / `newerWins`: the records the handled entries' XACKs write; absent: none. */
  readonly records?: Pick<AckRecordSource, 'handled'>;
}

/** The batch in a handler now, with the delivery counts of its read. */
export interface InHand {
  readonly batch: HandlingBatch;
  /** The messages of the batch (the records of those that finish are written with their ack). */
  readonly messages: readonly StreamMessage<unknown>[];
  /** Delivery counts after its read (`null`: a fresh read, all 1). */
  readonly counts: ReadonlyMap<string, number> | null;
}

/**
 * Handles one read and settles it: the read is sorted ({@link triage}); deleted entries are acked,
 * undecodable ones and poison pills go to the dead-letter path, the rest to the handler. Handled
 * entries join the pending acks, failures go to the retry policy, entries not started because of
 * shutdown are released to peers.
 */
export class Delivery {
  private current: InHand | null = null;
  /** How reads are sorted (one object for every read of the loop). */
  private readonly rules: TriageRules;

  constructor(
    private readonly context: LoopContext,
    private readonly parts: DeliveryParts,
  ) {
    const { stream, group, consumer, options, signal } = context;
    const { retries, checkpoints } = parts;
    this.rules = {
      stream,
      group,
      consumer,
      codec: options.codec,
      maxDeliveries: options.maxDeliveries,
      signal,
      isWaitingRetry: (id) => retries.has(id),
      saveCheckpoint: (entryId, value) => checkpoints.save(entryId, value),
      partition: context.partition,
    };
  }

  /** The batch in a handler now, if any (a stop that gives up settles it). */
  get inHand(): InHand | null {
    return this.current;
  }

  /** Handles and settles `entries`; `counts`: their delivery counts (`null`: a fresh read). */
  async process(entries: readonly RawEntry[], counts: Map<string, number> | null): Promise<void> {
    this.context.counters.read(entries.length);
    if (entries.length > 0) this.parts.pace.delivered();
    try {
      await this.deliver(entries, counts);
    } catch (err) {
      // entries of this read may sit unsettled in the own PEL: read it again once Redis is back
      this.parts.health.drainNeeded();
      throw err;
    }
  }

  private async deliver(
    entries: readonly RawEntry[],
    counts: Map<string, number> | null,
  ): Promise<void> {
    const { settlement, tracing } = this.parts;
    const read = triage(entries, counts, this.rules);
    let messages = await this.parts.checkpoints.attach(read.fresh);
    let fields = read.freshFields;
    if (this.parts.skips !== undefined && messages.length > 0) {
      const all = messages;
      const { run, skipped } = await this.parts.skips.filter(all);
      if (skipped.length > 0) {
        this.parts.acks.add(skipped);
        messages = run.map((i) => all[i]);
        fields = run.map((i) => read.freshFields[i]);
      }
    }
    if (tracing !== undefined)
      for (let i = 0; i < messages.length; i++) tracing.remember(messages[i], fields[i]);
    if (read.waitingRetries.length > 0 && counts)
      await settlement.uncharge(read.waitingRetries, counts);
    if (read.deleted.length > 0) await settlement.deleted(read.deleted);
    if (read.undecodable.length > 0) await settlement.deadLetter(read.undecodable, 'decode_error');
    if (read.poison.length > 0) await settlement.deadLetter(read.poison, 'max_deliveries');
    if (messages.length === 0) return;

    await this.parts.limiter.confirm(messages.length);
    this.parts.heldKeys?.reading(entries, counts);
    const outcome = await this.handle(messages, counts);
    // stop() gave up waiting: it settled this batch already and closed the connection
    if (this.context.isAbandoned()) return;
    await this.settle(messages, outcome, entries, counts);
  }

  /**
   * Runs the entries of a held key's lane (partitions, `HeldKeys`: one key, in stream order; its
   * entries are kept claimed by the lane) and settles them as a read's.
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
    await this.settle(messages, outcome, entries, counts);
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
  }

  private async handle(
    messages: StreamMessage<unknown>[],
    counts: ReadonlyMap<string, number> | null,
  ): Promise<HandleOutcome> {
    const { heartbeat } = this.parts;
    const ids = messages.map((m) => m.entryId);
    // the whole batch stays claimed until it is settled: an entry whose handler returned waits for
    // the batch's XACK, one that threw for its retry, one a guard rejected for the dead-letter path
    const batch = new BatchInHand(
      ids,
      heartbeat.hold('inHand', () => ids),
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
    private readonly held: HeldBatch,
  ) {
    this.unsettled = new Set(ids);
  }

  get touchedAt(): number {
    return this.held.touchedAt;
  }
}
