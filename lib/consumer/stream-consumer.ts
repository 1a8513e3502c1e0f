import { errorText } from '../codec/codecs';
import type { ConsumerSnapshot } from '../interfaces/consumer-snapshot.interface';
import type { RawEntry } from '../redis/streams-client';
import { AckBuffer } from './ack-buffer';
import { OwnConnectionRead } from './blocking-read';
import { ConsumerCounters } from './consumer-counters';
import type { StreamConsumerConfig } from './consumer.types';
import { DeadLetterPath } from './dead-letter-path';
import { Delivery } from './delivery';
import { HandlerRunner } from './handler-runner';
import { Heartbeat } from './heartbeat';
import { LoopHealth } from './loop-health';
import type { LoopContext } from './loop.types';
import { ParkedRead } from './parked-read';
import { PelSweep } from './pel-sweep';
import { rateLimiterFor, type StartLimiter } from './rate-limiter';
import { ReadAhead } from './read-ahead';
import { RetryClaims } from './retry-claims';
import { RetryScheduler } from './retry-scheduler';
import { Settlement } from './settlement';
import { Shutdown, StopSwitch } from './shutdown';
import { SweepPace } from './sweep-pace';

/**
 * One managed consumer loop over one stream and group. Each beat: drain the own PEL when needed,
 * sweep for dead peers' work when due, claim the retries that are due, then read new entries
 * (sending the pending acks with the read), handle and settle them. Each step is a collaborator
 * built from one {@link LoopContext}; the heartbeat keeps held entries claimed meanwhile, and
 * {@link Shutdown} stops it cleanly (docs/delivery.md "The loop"; the beat: docs/ARCHITECTURE.md
 * "The beat"). Plain TypeScript: no Nest imports.
 */
export class StreamConsumer {
  /** The stream this loop consumes. */
  readonly stream: string;
  /** Its consumer group. */
  readonly group: string;

  private readonly context: LoopContext;
  private readonly counters: ConsumerCounters;
  private readonly stopSwitch = new StopSwitch();
  private readonly health: LoopHealth;
  private readonly limiter: StartLimiter;
  private readonly pace: SweepPace;
  private readonly heartbeat: Heartbeat;
  private readonly acks: AckBuffer;
  private readonly delivery: Delivery;
  private readonly pel: PelSweep;
  private readonly retries: RetryClaims;
  private readonly readAhead: ReadAhead;
  private readonly parked: ParkedRead;
  private readonly shutdown: Shutdown;

  private running: Promise<void> | null = null;
  /** The one shutdown, shared by every `stop()` caller. */
  private stopped: Promise<void> | null = null;

  constructor(private readonly config: StreamConsumerConfig) {
    const { client, stream, group, consumer, handlerName, options, logger } = config;
    const now = config.now ?? Date.now;
    const stopSwitch = this.stopSwitch;
    this.stream = stream;
    this.group = group;
    this.counters = new ConsumerCounters({ stream, group, consumer, handler: handlerName }, now);
    const context: LoopContext = {
      stream,
      group,
      consumer,
      handlerName,
      where: `${handlerName} on ${stream}/${group}`,
      options,
      logger,
      counters: this.counters,
      signal: stopSwitch.signal,
      now,
      isStopping: () => stopSwitch.isStopping(),
      isAbandoned: () => stopSwitch.isAbandoned(),
    };
    this.context = context;

    const handler = config.tracing ? config.tracing.wrap(config.handler) : config.handler;
    const runner = new HandlerRunner(context, handler);
    const deadLetters = new DeadLetterPath(context, client, config.deadLetters);
    const scheduler = new RetryScheduler(context);
    this.limiter = rateLimiterFor(options.rateLimit, client, stream, group, {
      signal: stopSwitch.signal,
      now,
    });
    this.pace = new SweepPace(options.claimIntervalMs, options.minIdleMs, now, config.sweepPhase);
    this.health = new LoopHealth(context, client);
    const heartbeat = (this.heartbeat = new Heartbeat(context, client));
    heartbeat.keep('retries', scheduler.held);
    const acks = (this.acks = new AckBuffer(context, client, runner));
    const settlement = new Settlement(context, {
      client,
      deadLetters,
      heartbeat,
      retries: scheduler,
      errors: runner,
    });
    const { limiter, health } = this;
    this.delivery = new Delivery(context, {
      runner,
      settlement,
      acks,
      limiter,
      retries: scheduler,
      pace: this.pace,
      heartbeat,
      health,
      tracing: config.tracing,
    });
    const delivery = this.delivery;
    this.pel = new PelSweep(context, { client, delivery, acks, settlement, limiter });
    this.retries = new RetryClaims(context, {
      client,
      scheduler,
      limiter,
      settlement,
      delivery,
      health,
    });
    this.readAhead = new ReadAhead(context, { client, heartbeat, health, settlement });
    this.parked = new ParkedRead(
      config.reader ?? new OwnConnectionRead(client, stream, group, consumer),
    );
    this.shutdown = new Shutdown(context, {
      stopSwitch,
      parked: this.parked,
      heartbeat,
      delivery,
      acks,
      readAhead: this.readAhead,
      settlement,
      scheduler,
      retries: this.retries,
      deadLetters,
      closeClient: () => this.closeClient(),
    });
    const wake = (): void => health.wake();
    client.onReconnect?.(wake);
    config.reader?.onReconnect?.(wake);
  }

  /** Aborted when the loop is asked to stop; handed to every message. */
  get signal(): AbortSignal {
    return this.stopSwitch.signal;
  }

  /** Where this loop copies its dead letters; `false` for none. */
  get deadLetterStream(): string | false {
    return this.context.options.deadLetterStream;
  }

  /** Starts the loop (idempotent). It runs until `stop()`. */
  start(): void {
    if (this.running || this.stopSwitch.isStopping()) return;
    this.heartbeat.start();
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
    this.stopped ??= this.shutdown.run(this.running, timeoutMs);
    return this.stopped;
  }

  /** Closes the loop's connection, unless it is shared (its owner closes it after every loop). */
  private async closeClient(): Promise<void> {
    if (this.config.ownsClient !== false) await this.config.client.close();
  }

  private async run(): Promise<void> {
    const { context } = this;
    try {
      while (!context.isStopping()) {
        try {
          await this.beat();
        } catch (err) {
          if (context.isStopping()) break;
          await this.health.backOff(err);
        }
      }
      await this.readAhead.release();
      await this.acks.flush();
    } catch (err) {
      context.logger.error(
        `${context.where}: acks at shutdown failed: ${errorText(err)}; entries stay pending`,
      );
    }
    // on its own (it never throws): a failed ack must not keep the waiting retries from peers
    await this.retries.releaseAll();
    this.heartbeat.stop();
  }

  /**
   * One beat: settle what was read ahead when a PEL step follows; ensure the group; drain the own
   * PEL when needed; sweep when due; claim due retries; then read new entries and handle them.
   */
  private async beat(): Promise<void> {
    const { health, pace, pel, retries, acks, context } = this;
    // Redis answered a step of this beat before the read (evidence enough to show 'running')
    let answered = false;
    if (this.readAhead.inFlight && (health.mustPrepare || pace.due())) {
      // settle what was read ahead before a PEL drain (it would read those entries again) or a sweep
      const entries = await this.readAhead.take();
      if (entries.length > 0) await this.delivery.process(entries, null);
    }
    if (await health.ensureGroup()) answered = true;
    if (health.needsDrain) {
      await acks.flush();
      await pel.drainOwn();
      health.drained();
      answered = true;
    }
    if (pace.due()) {
      await acks.flush();
      const startedAt = context.now();
      pace.swept(await pel.sweep(), startedAt);
      answered = true;
    }
    if (retries.due()) {
      await retries.runDue();
      answered = true;
    }
    if (context.isStopping()) return;
    health.beforeRead(answered);
    await this.readNew();
  }

  /** Reads new entries (the pending acks go out with the read) and hands them to the delivery. */
  private async readNew(): Promise<void> {
    const { limiter, acks, context, health } = this;
    const { batchSize } = context.options;
    if (limiter.limits) await acks.flush(); // a throttled loop may wait: ack what is done first
    const allowed = await limiter.acquire(batchSize);
    if (context.isStopping()) return;
    const sent = acks.take();
    const ackDone = sent.length > 0 ? acks.send(sent) : undefined;
    const read = this.readAhead.inFlight ? this.readAhead.take() : this.park(allowed);
    const [ackResult, readResult] = await Promise.allSettled([ackDone, read]);
    this.parked.end();
    if (readResult.status === 'fulfilled' && ackResult.status === 'fulfilled') health.healthy();
    if (readResult.status === 'fulfilled') {
      const entries = readResult.value;
      limiter.refund(allowed - entries.length);
      if (entries.length > 0) {
        // a full read means a backlog: fetch the next batch while this one is handled (not when
        // rate limited: it may read only what it may start)
        const full = entries.length >= batchSize && !limiter.limits;
        if (full && !context.isStopping()) this.readAhead.start();
        await this.delivery.process(entries, null);
      }
    } else {
      // a reply lost on a dropped link may have delivered entries to us: read the own PEL again
      health.drainNeeded();
    }
    if (ackResult.status === 'rejected') {
      acks.putBack(sent);
      throw ackResult.reason;
    }
    if (readResult.status === 'rejected') throw readResult.reason;
  }

  /**
   * Parks a read of up to `count` new entries. It waits no longer than until the next sweep or
   * the next retry is due (or, rate limited, than its starts stay good); no single park outlasts
   * `blockMs`. Recovering, it comes back after one park, so the read that proves Redis healthy
   * again ends the backoff streak (and says so) at once: a shared read may wait across rounds.
   */
  private park(count: number): Promise<RawEntry[]> {
    const { blockMs } = this.context.options;
    const now = this.context.now();
    const retryDueAt = this.retries.nextDueAt();
    let wait = Math.max(1, Math.min(this.pace.nextAt, retryDueAt) - now);
    wait = Math.min(wait, this.limiter.validForMs());
    if (this.health.recovering) wait = Math.min(wait, blockMs);
    return this.parked.read(count, wait, blockMs, retryDueAt - now);
  }
}
