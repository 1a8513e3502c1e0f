import { decodeEntry, errorText } from '../codec/codecs';
import type { ConsumerSnapshot } from '../interfaces/consumer-snapshot.interface';
import type { DeadLetterReason } from '../interfaces/dead-letter-message.interface';
import type { StreamMessage } from '../interfaces/stream-message.interface';
import { compareEntryIds } from '../redis/entry-id';
import { isNoGroupError, isWrongTypeError, type RawEntry } from '../redis/streams-client';
import { BACKOFF_INITIAL_MS, backoffDelay, sleep } from './backoff';
import { OwnConnectionRead, type BlockingReader } from './blocking-read';
import { ConsumerCounters } from './consumer-counters';
import type {
  ConsumerLogger,
  ResolvedHandlerOptions,
  StreamConsumerConfig,
} from './consumer.types';
import { DeadLetterPath, type DeadLetterCandidate } from './dead-letter-path';
import {
  HandlerRunner,
  type HandleOutcome,
  type HandlingBatch,
  type HeldBatch,
  type RejectedEntry,
} from './handler-runner';
import { rateLimiterFor, type RateLimiter } from './rate-limiter';
import { RetryScheduler, type FailedEntry } from './retry-scheduler';
import { stillRunning } from './shutdown-warning';
import { SweepPace } from './sweep-pace';

/**
 * One managed consumer loop over one stream and group (SPEC §3): ensure the group, drain the own
 * PEL, read new entries, reclaim idle ones, sweep poison pills, keep long work claimed, back off on
 * Redis errors, and stop cleanly. Plain TypeScript: no Nest imports.
 */
export class StreamConsumer {
  /** Counters the loop owns; `ConsumerStats` reads them. */
  readonly counters: ConsumerCounters;

  /** The stream this loop consumes. */
  readonly stream: string;
  /** Its consumer group. */
  readonly group: string;
  private readonly consumer: string;
  private readonly options: ResolvedHandlerOptions;
  private readonly logger: ConsumerLogger;
  private readonly now: () => number;
  private readonly where: string;
  private readonly abort = new AbortController();
  private readonly deadLetters: DeadLetterPath;
  private readonly runner: HandlerRunner;
  private readonly retries: RetryScheduler;
  /** `rateLimit`: how many entries the loop may read (and start) now; `null` = no limit. */
  private readonly limiter: RateLimiter | null;
  /** How the loop waits for new entries: on its own connection or in its group's shared read. */
  private readonly reader: BlockingReader;

  private running: Promise<void> | null = null;
  private stopping = false;
  /** The one shutdown, shared by every `stop()` caller. */
  private stopped: Promise<void> | null = null;
  private parked = false;
  private groupKnown = false;
  private needsDrain = true;
  private readonly pace: SweepPace;
  private streak = 0;
  private pendingAcks: string[] = [];
  private held: HandlingBatch | null = null;
  /** Delivery counts of the batch in `held` after its read (`null`: a fresh read, all 1). */
  private heldCounts: ReadonlyMap<string, number> | null = null;
  /** `stop()` gave up on a handler and settled its batch itself; the loop's outcome is dropped. */
  private abandoned = false;
  /** The entries on the dead-letter path right now: claimed by us, kept claimed like `held`. */
  private dying: HeldBatch | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  /** Aborted when the connection comes back, so a long backoff does not outlast an outage. */
  private backoffWake: AbortController | null = null;
  /**
   * Read-ahead: after a FULL read (a backlog), the next XREADGROUP (without BLOCK) goes out before
   * the batch is handled, so Redis serves it while the handler runs. Once its reply is in, its
   * entries are kept claimed by the heartbeat (`ahead`) and released to peers at stop.
   */
  private readAhead: Promise<RawEntry[]> | null = null;
  private ahead: HeldBatch | null = null;

  constructor(private readonly config: StreamConsumerConfig) {
    this.stream = config.stream;
    this.group = config.group;
    this.consumer = config.consumer;
    this.options = config.options;
    this.logger = config.logger;
    this.now = config.now ?? Date.now;
    this.where = `${config.handlerName} on ${config.stream}/${config.group}`;
    this.counters = new ConsumerCounters(
      {
        stream: config.stream,
        group: config.group,
        consumer: config.consumer,
        handler: config.handlerName,
      },
      this.now,
    );
    this.deadLetters = new DeadLetterPath(
      {
        stream: config.stream,
        group: config.group,
        consumer: config.consumer,
        handlerName: config.handlerName,
        deadLetterStream: config.options.deadLetterStream,
      },
      config.client,
      config.deadLetters,
      this.counters,
      config.logger,
      this.now,
      () => this.stopping,
      () => this.abandoned,
    );
    this.runner = new HandlerRunner(
      config.tracing ? config.tracing.wrap(config.handler) : config.handler,
      config.options.concurrency,
      this.counters,
      config.logger,
      this.where,
      () => this.stopping,
      this.now,
    );
    this.retries = new RetryScheduler({
      policy: config.options.retry,
      maxDeliveries: config.options.maxDeliveries,
      where: this.where,
      logger: config.logger,
      counters: this.counters,
      now: this.now,
    });
    this.limiter = rateLimiterFor(
      config.options.rateLimit,
      config.client,
      this.stream,
      this.group,
      {
        signal: this.abort.signal,
        now: this.now,
      },
    );
    this.pace = new SweepPace(
      config.options.claimIntervalMs,
      config.options.minIdleMs,
      this.now,
      config.sweepPhase,
    );
    this.reader =
      config.reader ??
      new OwnConnectionRead(config.client, config.stream, config.group, config.consumer);
    const wake = (): void => this.backoffWake?.abort();
    config.client.onReconnect?.(wake);
    this.reader.onReconnect?.(wake);
  }

  /** Aborted when the loop is asked to stop; handed to every message. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Where this loop copies its dead letters; `false` for none. */
  get deadLetterStream(): string | false {
    return this.options.deadLetterStream;
  }

  /** Starts the loop (idempotent). It runs until `stop()`. */
  start(): void {
    if (this.running || this.stopping) return;
    const period = Math.max(25, Math.floor(this.options.minIdleMs / 4));
    this.heartbeat = setInterval(() => void this.keepClaimed(), period);
    this.heartbeat.unref();
    this.running = this.run();
  }

  /** The loop's figures now. */
  snapshot(): ConsumerSnapshot {
    return this.counters.snapshot();
  }

  /**
   * Stops the loop: no new reads, the signal aborts, in-flight handlers get up to `timeoutMs`,
   * settled entries are acked, unstarted ones released to peers, the connection closed. Every
   * call gets the same promise (the first call's `timeoutMs` holds): it settles once the loop is
   * down, however many callers (an admin drain, then SIGTERM) asked.
   */
  stop(timeoutMs: number): Promise<void> {
    this.stopped ??= this.shutDown(timeoutMs);
    return this.stopped;
  }

  private async shutDown(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    if (!this.running) {
      this.counters.state = 'stopped';
      await this.closeClient();
      return;
    }
    this.counters.state = 'stopping';
    void this.wakeParkedRead();
    const finished = await settleWithin(this.running, timeoutMs);
    if (!finished) {
      this.abandoned = true;
      const inHandlers = await this.settleAbandoned();
      this.logger.warn(
        `${this.where}: ${stillRunning(inHandlers, this.deadLetters.inFlight, timeoutMs)}`,
      );
    }
    this.stopHeartbeat();
    await this.closeClient();
    this.counters.state = 'stopped';
  }

  /** Closes the loop's connection, unless it is shared (its owner closes it after every loop). */
  private async closeClient(): Promise<void> {
    if (this.config.ownsClient !== false) await this.config.client.close();
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopping) {
        try {
          await this.beat();
        } catch (err) {
          if (this.stopping) break;
          const delay = this.degrade(err);
          this.backoffWake = new AbortController();
          await sleep(delay, AbortSignal.any([this.abort.signal, this.backoffWake.signal]));
          this.backoffWake = null;
        }
      }
      await this.releaseReadAhead();
      await this.flushAcks();
    } catch (err) {
      this.logger.error(
        `${this.where}: acks at shutdown failed: ${errorText(err)}; entries stay pending`,
      );
    }
    // on its own (it never throws): a failed ack must not keep the waiting retries from peers
    await this.releaseRetries();
    this.stopHeartbeat();
  }

  /** One pass: ensure, drain own PEL when needed, sweep when due, then park on a read of new entries. */
  private async beat(): Promise<void> {
    const { client } = this.config;
    // Redis answered a step of this beat before the read (evidence enough to show 'running')
    let answered = false;
    if (this.readAhead && (!this.groupKnown || this.needsDrain || this.pace.due())) {
      // settle what was read ahead before a PEL drain (it would read those entries again) or a sweep
      const entries = await this.takeReadAhead();
      if (entries.length > 0) await this.process(entries, null);
    }
    if (!this.groupKnown) {
      const created = await client.createGroup(this.stream, this.group, this.options.startId);
      this.groupKnown = true;
      answered = true;
      if (created)
        this.logger.log(`Created group ${this.stream}/${this.group} at ${this.options.startId}`);
    }
    if (this.needsDrain) {
      await this.flushAcks();
      await this.drainOwn();
      this.needsDrain = false;
      answered = true;
    }
    if (this.pace.due()) {
      await this.flushAcks();
      const startedAt = this.now();
      this.pace.swept(await this.sweep(), startedAt);
      answered = true;
    }
    if (this.retries.nextDueAt() <= this.now()) {
      await this.runDueRetries();
      answered = true;
    }
    if (this.stopping) return;
    // The backoff streak is reset only once the read and its XACK went through (below): a read or
    // an XACK that keeps failing must back off 100, 200, 400 ms..., not retry every 100 ms.
    if (answered || this.streak === 0) this.counters.state = 'running';

    if (this.limiter) await this.flushAcks(); // a throttled loop may wait: ack what is done first
    const allowed = this.limiter ? await this.limiter.acquire(this.options.batchSize) : 0;
    if (this.stopping) return;
    const acks = this.takeAcks();
    const ackDone = acks.length > 0 ? this.ack(acks) : undefined;
    // the read waits no longer than until the next sweep or the next retry is due (or, rate
    // limited, than its starts stay good); no single park outlasts blockMs
    const wakeAt = Math.min(this.pace.nextAt, this.retries.nextDueAt());
    let wait = Math.max(1, wakeAt - this.now());
    if (this.limiter) wait = Math.min(wait, this.limiter.validForMs());
    // recovering: a shared read may wait across rounds; come back after one park, so the read
    // that proves Redis healthy again ends the backoff streak (and says so) at once
    if (this.streak > 0) wait = Math.min(wait, this.options.blockMs);
    let read: Promise<RawEntry[]>;
    let retryWake: NodeJS.Timeout | undefined;
    if (this.readAhead) {
      read = this.takeReadAhead();
    } else {
      this.parked = true;
      read = this.reader.read(
        this.limiter ? allowed : this.options.batchSize,
        wait,
        this.options.blockMs,
      );
      // Redis ends a BLOCK on its own clock tick (up to 100 ms late at hz 10): a retry coming due
      // during the read wakes it on time with CLIENT UNBLOCK instead
      const retryDue = this.retries.nextDueAt() - this.now();
      if (retryDue <= wait) retryWake = setTimeout(() => this.wakeForRetry(), retryDue);
    }
    const [ackResult, readResult] = await Promise.allSettled([ackDone, read]);
    clearTimeout(retryWake);
    this.parked = false;
    if (readResult.status === 'fulfilled' && ackResult.status === 'fulfilled') this.markHealthy();
    if (readResult.status === 'fulfilled') {
      const entries = readResult.value;
      this.limiter?.refund(allowed - entries.length);
      if (entries.length > 0) {
        // a full read means a backlog: fetch the next batch while this one is handled (not when
        // rate limited: it may read only what it may start)
        const full = entries.length >= this.options.batchSize && !this.limiter;
        if (full && !this.stopping) this.startReadAhead();
        await this.process(entries, null);
      }
    } else {
      // a reply lost on a dropped link may have delivered entries to us: read the own PEL again
      this.needsDrain = true;
    }
    if (ackResult.status === 'rejected') {
      this.pendingAcks = acks.concat(this.pendingAcks);
      throw ackResult.reason;
    }
    if (readResult.status === 'rejected') throw readResult.reason;
  }

  /** Reads the own PEL from 0 to its end, settling each entry: a restart recovers its held work. */
  private async drainOwn(): Promise<void> {
    const { client } = this.config;
    let cursor = '0';
    while (!this.stopping) {
      const count = await this.allowance();
      if (count === 0) return; // stopping
      const entries = await client.readGroup(this.stream, this.group, this.consumer, count, cursor);
      this.limiter?.refund(count - entries.length);
      if (entries.length === 0) return;
      cursor = entries[entries.length - 1].entryId;
      await this.process(entries, await this.deliveryCounts(entries));
      await this.flushAcks();
    }
  }

  /**
   * Looks for work of dead peers: poison pills first, then XAUTOCLAIM of idle entries. A group
   * whose PEL is empty costs one XPENDING summary (its pace: `SweepPace`). Returns how many
   * entries the PEL held.
   */
  private async sweep(): Promise<number> {
    const pending = await this.config.client.pendingCount(this.stream, this.group);
    if (pending > 0 && (await this.sweepPoison())) await this.reclaim();
    return pending;
  }

  /**
   * Pages through the group's PEL (idle entries only) and dead-letters those delivered
   * `maxDeliveries` times. Claiming first makes one consumer the only one that dead-letters it.
   * Returns whether any entry was idle past `minIdleMs` (else XAUTOCLAIM would find nothing).
   */
  private async sweepPoison(): Promise<boolean> {
    const { client } = this.config;
    const { minIdleMs, batchSize, maxDeliveries, maxClaimPasses } = this.options;
    let start = '-';
    for (let pages = 1; !this.stopping; pages++) {
      const rows = await client.pending(this.stream, this.group, {
        minIdleMs,
        start,
        end: '+',
        count: batchSize,
      });
      if (pages === 1 && rows.length === 0) return false;
      const poison = rows.filter((row) => row.deliveries >= maxDeliveries);
      if (poison.length > 0) {
        const won = await client.claim(
          this.stream,
          this.group,
          this.consumer,
          minIdleMs,
          poison.map((row) => row.entryId),
        );
        const deliveries = new Map(poison.map((row) => [row.entryId, row.deliveries]));
        const candidates: DeadLetterCandidate[] = [];
        const wonIds = new Set<string>();
        for (const entry of won) {
          if (entry.fields === null) continue;
          wonIds.add(entry.entryId);
          candidates.push(
            this.candidate(
              entry.entryId,
              entry.fields,
              deliveries.get(entry.entryId) ?? maxDeliveries,
            ),
          );
        }
        const lost = poison.map((row) => row.entryId).filter((id) => !wonIds.has(id));
        if (lost.length > 0) await this.settleGone(lost);
        await this.sendDead(candidates, 'max_deliveries');
      }
      if (rows.length < batchSize || (maxClaimPasses !== null && pages >= maxClaimPasses))
        return true;
      start = `(${rows[rows.length - 1].entryId}`;
    }
    return true;
  }

  /** XAUTOCLAIM cursor loop: takes over entries idle past `minIdleMs`, from any consumer. */
  private async reclaim(): Promise<void> {
    const { client } = this.config;
    const { minIdleMs, batchSize, maxClaimPasses } = this.options;
    let cursor = '0-0';
    for (let passes = 1; !this.stopping; passes++) {
      const count = this.limiter ? await this.allowance() : batchSize;
      if (count === 0) return; // stopping
      const page = await client.autoClaim(
        this.stream,
        this.group,
        this.consumer,
        minIdleMs,
        cursor,
        count,
      );
      this.limiter?.refund(count - page.entries.length);
      if (page.deletedIds.length > 0) await this.settleDeleted(page.deletedIds);
      if (page.entries.length > 0) {
        await this.process(page.entries, await this.deliveryCounts(page.entries));
        await this.flushAcks();
      }
      const stalled =
        page.cursor === cursor && page.entries.length === 0 && page.deletedIds.length === 0;
      if (page.cursor === '0-0' || stalled) return;
      if (maxClaimPasses !== null && passes >= maxClaimPasses) return;
      cursor = page.cursor;
    }
  }

  /**
   * Delivery counts of entries this consumer holds, from one XPENDING range per batch (more only
   * when the range holds other pending entries of ours).
   */
  private async deliveryCounts(entries: readonly RawEntry[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    if (entries.length === 0) return counts;
    const wanted = entries.length;
    const end = entries[entries.length - 1].entryId;
    let start = entries[0].entryId;
    for (;;) {
      const rows = await this.config.client.pending(this.stream, this.group, {
        start,
        end,
        count: wanted,
        consumer: this.consumer,
      });
      for (const row of rows) counts.set(row.entryId, row.deliveries);
      if (rows.length < wanted || entries.every((e) => counts.has(e.entryId))) return counts;
      start = `(${rows[rows.length - 1].entryId}`;
    }
  }

  /**
   * Settles one read: deleted entries are acked and counted, undecodable ones and poison pills go
   * to the dead-letter path, the rest to the handler. Handled entries join the pending acks;
   * entries not started because of shutdown are released to peers.
   */
  private async process(
    entries: readonly RawEntry[],
    counts: Map<string, number> | null,
  ): Promise<void> {
    this.counters.read(entries.length);
    if (entries.length > 0) this.pace.delivered();
    try {
      await this.settle(entries, counts);
    } catch (err) {
      // entries of this read may sit unsettled in the own PEL: read it again once Redis is back
      this.needsDrain = true;
      throw err;
    }
  }

  private async settle(
    entries: readonly RawEntry[],
    counts: Map<string, number> | null,
  ): Promise<void> {
    const { codec, maxDeliveries } = this.options;
    const messages: StreamMessage<unknown>[] = [];
    let deleted: string[] | undefined;
    let undecodable: DeadLetterCandidate[] | undefined;
    let poison: DeadLetterCandidate[] | undefined;
    let waitingRetries: string[] | undefined;
    for (const entry of entries) {
      const { entryId, fields } = entry;
      // a retry waiting for its time is ours and pending: a read of the own PEL (or our own
      // reclaim, when the heartbeat fell behind) must not start it
      if (this.retries.has(entryId)) {
        (waitingRetries ??= []).push(entryId);
        continue;
      }
      if (fields === null) {
        (deleted ??= []).push(entryId);
        continue;
      }
      const attempts = counts === null ? 1 : (counts.get(entryId) ?? 1);
      if (attempts > maxDeliveries) {
        // this read (a drain, a reclaim) reached no handler: the letter says what the poison
        // sweep would, the deliveries before it
        (poison ??= []).push(this.candidate(entryId, fields, attempts - 1));
        continue;
      }
      let decoded;
      try {
        decoded = decodeEntry(codec, fields);
      } catch (err) {
        (undecodable ??= []).push({ entryId, fields, attempts, error: errorText(err) });
        continue;
      }
      const message: StreamMessage<unknown> = {
        id: decoded.id ?? entryId,
        entryId,
        stream: this.stream,
        group: this.group,
        consumer: this.consumer,
        payload: decoded.payload,
        attempts,
        signal: this.abort.signal,
      };
      if (this.config.tracing !== undefined) this.config.tracing.remember(message, fields);
      messages.push(message);
    }
    if (waitingRetries && counts) await this.uncharge(waitingRetries, counts);
    if (deleted) await this.settleDeleted(deleted);
    if (undecodable) await this.sendDead(undecodable, 'decode_error');
    if (poison) await this.sendDead(poison, 'max_deliveries');
    if (messages.length === 0) return;

    if (this.limiter) await this.limiter.confirm(messages.length);
    const outcome = await this.handle(messages, counts);
    if (this.abandoned) return; // stop() settled this batch already and closed the connection
    for (const id of outcome.ok) this.pendingAcks.push(id);
    if (outcome.rejected) await this.sendRejected(outcome.rejected, entries);
    if (outcome.failed.length > 0) await this.settleFailed(outcome.failed, entries);
    await this.releaseUnstarted(outcome.unstarted, counts, 'unstarted');
  }

  /**
   * Failed entries: a `NonRetryableError` or a failure on the last allowed delivery goes to the
   * dead-letter path now; the retry scheduler keeps the rest until they are due.
   */
  private async settleFailed(failed: FailedEntry[], entries: readonly RawEntry[]): Promise<void> {
    const { nonRetryable, exhausted } = this.retries.route(failed);
    if (nonRetryable.length === 0 && exhausted.length === 0) return;
    const fields = new Map(entries.map((e) => [e.entryId, e.fields ?? []]));
    const dead = (list: FailedEntry[]): DeadLetterCandidate[] =>
      list.map(({ message: { entryId, attempts } }) => {
        const candidate = this.candidate(entryId, fields.get(entryId) ?? [], attempts);
        candidate.error ??= 'not returned for ack by the batch handler';
        return candidate;
      });
    await this.sendDead(dead(nonRetryable), 'non_retryable');
    await this.sendDead(dead(exhausted), 'max_deliveries');
  }

  /**
   * Hands the retries that are due to the handler: XCLAIM without JUSTID returns their bodies and
   * adds one to their delivery count (the new attempt), in one command for all of them.
   */
  private async runDueRetries(): Promise<void> {
    const { client } = this.config;
    // in stream order, as any read (and as deliveryCounts' XPENDING range expects)
    const allowed = await this.allowance();
    const ids = this.retries.takeDue(allowed).sort(compareEntryIds);
    this.limiter?.refund(allowed - ids.length);
    if (ids.length === 0) return;
    let entries: RawEntry[];
    let counts: Map<string, number>;
    try {
      entries = await client.claim(this.stream, this.group, this.consumer, 0, ids);
    } catch (err) {
      this.retries.putBack(ids);
      throw err;
    }
    try {
      const won = new Set(entries.map((e) => e.entryId));
      const missing = ids.filter((id) => !won.has(id));
      if (missing.length > 0) await this.settleGone(missing);
      counts = await this.deliveryCounts(entries);
    } catch (err) {
      this.needsDrain = true; // claimed, not started: the own PEL read picks them up
      throw err;
    }
    if (entries.length > 0) await this.process(entries, counts);
  }

  /**
   * At stop: waiting retries go to peers. Each one's idle time is set so that a peer's sweep
   * (idle >= minIdleMs) takes it when it is due, not before (at once when already due; after
   * minIdleMs at the latest). Idle times are rounded down to buckets: few commands. Never throws:
   * what it cannot release stays pending and is reclaimed after minIdleMs.
   */
  private async releaseRetries(): Promise<void> {
    const waiting = this.retries.takeAll();
    if (waiting.length === 0) return;
    try {
      await this.releaseWaiting(waiting);
    } catch (err) {
      this.logger.error(
        `${this.where}: releasing ${waiting.length} waiting retries at shutdown failed: ` +
          `${errorText(err)}; they stay pending and are reclaimed after minIdleMs`,
      );
    }
  }

  private async releaseWaiting(waiting: Array<{ entryId: string; dueAt: number }>): Promise<void> {
    const { minIdleMs } = this.options;
    const bucket = Math.max(100, Math.ceil(minIdleMs / 20));
    const now = this.now();
    const byIdle = new Map<number, string[]>();
    for (const { entryId, dueAt } of waiting) {
      const idle = Math.max(0, minIdleMs - Math.max(0, dueAt - now));
      const rounded = Math.floor(idle / bucket) * bucket;
      const ids = byIdle.get(rounded);
      if (ids) ids.push(entryId);
      else byIdle.set(rounded, [entryId]);
    }
    for (const [idle, ids] of byIdle) {
      await this.config.client.release(this.stream, this.group, this.consumer, ids, idle);
    }
    this.logger.log(`${this.where}: released ${waiting.length} waiting retries to peers`);
  }

  private async handle(
    messages: StreamMessage<unknown>[],
    counts: ReadonlyMap<string, number> | null,
  ): Promise<HandleOutcome> {
    const ids = messages.map((m) => m.entryId);
    const held: HandlingBatch = {
      ids,
      unsettled: new Set(ids),
      touchedAt: this.now(),
      started: new Set(),
      ok: [],
      failed: [],
    };
    this.held = held;
    this.heldCounts = counts;
    try {
      return await this.runner.run(messages, held);
    } finally {
      this.held = null;
      this.heldCounts = null;
    }
  }

  /**
   * Hands entries this consumer read but never started back to peers (idle past `minIdleMs`, so
   * the next sweep of a live peer takes them) with the delivery count they had before that read:
   * a read that reached no handler is not charged. `counts` holds the counts after the read (drain,
   * reclaim); `null` for a fresh read, whose count is 1.
   */
  /**
   * Waiting retries that a drain or our own reclaim read again: that read reached no handler, so
   * it is not charged (README "What counts as a delivery"); the count goes back to what it was
   * and the entries stay ours (idle 0), waiting for their time.
   */
  private async uncharge(
    ids: readonly string[],
    counts: ReadonlyMap<string, number>,
  ): Promise<void> {
    const before = ids.map((id) => Math.max(0, (counts.get(id) ?? 1) - 1));
    await this.config.client.release(this.stream, this.group, this.consumer, ids, 0, before);
  }

  private async releaseUnstarted(
    ids: readonly string[],
    counts: ReadonlyMap<string, number> | null,
    what: string,
  ): Promise<void> {
    if (ids.length === 0) return;
    const before = ids.map((id) => Math.max(0, (counts?.get(id) ?? 1) - 1));
    await this.config.client.release(
      this.stream,
      this.group,
      this.consumer,
      ids,
      this.options.minIdleMs,
      before,
    );
    this.logger.log(`${this.where}: released ${ids.length} ${what} entries to peers`);
  }

  /**
   * The dead-letter path, with the entries kept claimed while it runs: a `@DeadLetter` method slower
   * than `minIdleMs` must not let a peer's sweep claim the entry and dead-letter it again.
   */
  private async sendDead(
    candidates: DeadLetterCandidate[],
    reason: DeadLetterReason,
  ): Promise<void> {
    if (candidates.length === 0) return;
    this.dying = { unsettled: new Set(candidates.map((c) => c.entryId)), touchedAt: this.now() };
    try {
      await this.deadLetters.send(candidates, reason);
    } finally {
      this.dying = null;
    }
  }

  /** A guard or pipe refused these entries: retrying cannot help, so they leave at once (SPEC §10). */
  private async sendRejected(
    rejected: readonly RejectedEntry[],
    entries: readonly RawEntry[],
  ): Promise<void> {
    const byId = new Map(entries.map((e) => [e.entryId, e]));
    const candidates: DeadLetterCandidate[] = [];
    for (const { entryId, attempts, error } of rejected) {
      const fields = byId.get(entryId)?.fields;
      if (fields) candidates.push({ entryId, fields, attempts, error });
    }
    await this.sendDead(candidates, 'rejected');
  }

  private candidate(entryId: string, fields: string[], attempts: number): DeadLetterCandidate {
    return { entryId, fields, attempts, error: this.runner.lastErrorOf(entryId) };
  }

  private async settleDeleted(ids: readonly string[]): Promise<void> {
    await this.config.client.ack(this.stream, this.group, ids);
    this.counters.totalDeleted += ids.length;
    this.logger.warn(
      `${this.where}: ${ids.length} pending entries were deleted from the stream (${ids.join(', ')}); acked, nothing to handle`,
    );
  }

  /**
   * Poison ids the XCLAIM did not win: a peer holds them (they still exist), or they were deleted
   * from the stream. NOTE: Redis 7's XCLAIM drops a deleted entry from the PEL without a word
   * (6.2 claims it and answers nil), so only a look at the stream tells; both count as deleted.
   */
  private async settleGone(ids: readonly string[]): Promise<void> {
    const { client } = this.config;
    const found = await Promise.all(ids.map((id) => client.range(this.stream, id, id, 1)));
    const gone = ids.filter((_, i) => found[i].length === 0);
    if (gone.length > 0) await this.settleDeleted(gone);
  }

  /**
   * `stop()` gave up waiting for a handler: acks what settled (the pending acks and the entries of
   * the batch in hand that finished), releases the entries never started and the retries that wait
   * (with the failures of the batch in hand: they wait like any other), as a stop that did not time
   * out would. Returns the entries still in a handler: they stay pending.
   */
  private async settleAbandoned(): Promise<string[]> {
    const held = this.held;
    const acks = this.takeAcks();
    if (held) acks.push(...held.ok.splice(0));
    const unsettled = held ? [...held.unsettled] : [];
    const unstarted = unsettled.filter((id) => !held?.started.has(id));
    const readAhead = this.readAhead ? await this.takeReadAhead().catch(() => []) : [];
    for (const entry of readAhead) unstarted.push(entry.entryId);
    try {
      if (acks.length > 0) await this.ack(acks);
      // read-ahead entries are fresh reads: absent from the held counts, their count was 1
      await this.releaseUnstarted(unstarted, this.heldCounts, 'unstarted');
    } catch (err) {
      this.logger.error(
        `${this.where}: settling at shutdown failed: ${errorText(err)}; entries stay pending`,
      );
    }
    // the loop never routes this batch's failures now; final ones (no dead-letter work starts
    // once stopping) stay pending for whoever takes them over after minIdleMs
    if (held) this.retries.route(held.failed.splice(0));
    await this.releaseRetries();
    return unsettled.filter((id) => held?.started.has(id));
  }

  private takeAcks(): string[] {
    const acks = this.pendingAcks;
    this.pendingAcks = [];
    return acks;
  }

  /** How many entries the loop may read now: `batchSize`, or what the rate limit allows. */
  private async allowance(): Promise<number> {
    return this.limiter ? this.limiter.acquire(this.options.batchSize) : this.options.batchSize;
  }

  private async flushAcks(): Promise<void> {
    const acks = this.takeAcks();
    if (acks.length === 0) return;
    try {
      await this.ack(acks);
    } catch (err) {
      this.pendingAcks = acks.concat(this.pendingAcks);
      throw err;
    }
  }

  private async ack(ids: string[]): Promise<void> {
    await this.config.client.ack(this.stream, this.group, ids);
    this.counters.acked(ids.length);
    this.runner.forget(ids);
  }

  /**
   * Heartbeat: re-claims entries held longer than `minIdleMs / 2` (the batch in hand, read ahead,
   * on the dead-letter path, waiting for a retry), so peers do not reclaim live or finished work
   * nor dead-letter an entry a second time.
   */
  private async keepClaimed(): Promise<void> {
    await Promise.all([
      // the whole batch in hand until it is settled: an entry whose handler returned waits for the
      // batch's XACK, one that threw for its retry, one a guard rejected for the dead-letter path;
      // a peer must take none of them (a duplicate, an early retry)
      this.touchHeld(this.held, (held) => held.ids),
      this.touchHeld(this.dying),
      this.touchHeld(this.ahead),
      this.touchHeld(this.retries.held),
    ]);
  }

  /** Sends the next read now; no BLOCK, so it never parks the connection ahead of the XACK. */
  private startReadAhead(): void {
    const { client } = this.config;
    const readAhead = client.readGroup(
      this.stream,
      this.group,
      this.consumer,
      this.options.batchSize,
      '>',
    );
    this.readAhead = readAhead;
    readAhead.then(
      (entries) => {
        if (this.readAhead !== readAhead || entries.length === 0) return;
        this.ahead = { unsettled: new Set(entries.map((e) => e.entryId)), touchedAt: this.now() };
      },
      () => {
        // a reply lost on a dropped link may have delivered entries to us: read the own PEL again
        this.needsDrain = true;
      },
    );
  }

  private takeReadAhead(): Promise<RawEntry[]> {
    const readAhead = this.readAhead ?? Promise.resolve([]);
    this.readAhead = null;
    this.ahead = null;
    return readAhead;
  }

  /** At stop: entries read ahead were never started; peers take them over at once. */
  private async releaseReadAhead(): Promise<void> {
    if (!this.readAhead) return;
    const entries = await this.takeReadAhead().catch(() => []);
    await this.releaseUnstarted(
      entries.map((e) => e.entryId),
      null,
      'read-ahead',
    );
  }

  private async touchHeld<T extends HeldBatch>(
    held: T | null,
    ids: (held: T) => readonly string[] = (h) => [...h.unsettled],
  ): Promise<void> {
    if (!held) return;
    const now = this.now();
    if (now - held.touchedAt < this.options.minIdleMs / 2) return;
    const entryIds = ids(held);
    if (entryIds.length === 0) return;
    held.touchedAt = now;
    try {
      await this.config.client.touch(this.stream, this.group, this.consumer, entryIds);
    } catch (err) {
      this.logger.warn(
        `${this.where}: heartbeat failed (${errorText(err)}); retrying on the next tick`,
      );
      held.touchedAt = 0;
    }
  }

  /** Records a Redis error; returns how long to back off. */
  private degrade(err: unknown): number {
    const text = errorText(err);
    this.counters.state = 'degraded';
    this.counters.lastError = text;
    if (isNoGroupError(err)) {
      // Redis answered, and the next beat re-creates the group: no reason to wait long (and the
      // streak is left as it is, so a failing re-create still backs off as far as before).
      const delay = BACKOFF_INITIAL_MS;
      this.groupKnown = false;
      this.needsDrain = true;
      this.logger.warn(
        `${this.where}: group or stream is gone (${text}); re-creating it in ${delay} ms`,
      );
      return delay;
    }
    this.streak++;
    const delay = backoffDelay(this.streak);
    if (isWrongTypeError(err)) {
      this.logger.error(
        `${this.where}: key '${this.stream}' holds a value that is not a stream (${text}); ` +
          `it is left untouched; retrying in ${delay} ms`,
      );
    } else {
      this.logger.error(`${this.where}: Redis error (${text}); retrying in ${delay} ms`);
    }
    return delay;
  }

  /** The read and its XACK went through: the backoff streak starts over, the loop is running. */
  private markHealthy(): void {
    if (this.streak > 0) {
      this.logger.log(`${this.where}: recovered after ${this.streak} failed attempts`);
      this.streak = 0;
    }
    if (!this.stopping) this.counters.state = 'running';
  }

  /**
   * A due retry ends the parked read early with CLIENT UNBLOCK; where that is denied (a minimal
   * ACL) the retry waits for the read's BLOCK timeout instead of dropping a healthy connection.
   */
  private wakeForRetry(): void {
    if (this.parked) this.reader.interrupt(false).catch(() => undefined);
  }

  /** CLIENT UNBLOCK can overtake the read it targets on the wire: retry until the read returns. */
  private async wakeParkedRead(): Promise<void> {
    for (let tries = 0; this.parked && tries < 40; tries++) {
      await this.reader.interrupt(true).catch(() => undefined);
      await sleep(50);
    }
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}

/** True when `promise` settles within `ms`; the timer never outlives the wait. */
function settleWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    promise.then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(true);
      },
    );
  });
}
