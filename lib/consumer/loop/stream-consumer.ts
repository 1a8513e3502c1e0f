import { errorText } from '../../codec/codecs';
import type { ConsumerSnapshot } from '../../interfaces/consumer-snapshot.interface';
import type { RawEntry } from '../../redis/stream-roles';
import type { StreamConsumerConfig } from './loop-config';
import { wireLoop, type LoopParts } from './loop-wiring';

/**
 * One managed consumer loop over one stream and group. Each beat: drain the own PEL when needed,
 * sweep for dead peers' work when due, claim the retries that are due, then read new entries
 * (sending the pending acks with the read), handle and settle them. Each step is a collaborator
 * built from one `LoopContext` (`wireLoop`); the heartbeat keeps held entries claimed meanwhile,
 * and `Shutdown` stops the loop cleanly (docs/delivery.md "The loop"; the beat:
 * docs/ARCHITECTURE.md "The beat"). Plain TypeScript: no Nest imports.
 */
export class StreamConsumer {
  /** The stream this loop consumes. */
  readonly stream: string;
  /** Its consumer group. */
  readonly group: string;

  /** The steps of the beat, built from one context (`wireLoop`). */
  private readonly loop: LoopParts;
  private running: Promise<void> | null = null;
  /** The one shutdown, shared by every `stop()` caller. */
  private stopped: Promise<void> | null = null;

  constructor(config: StreamConsumerConfig) {
    this.stream = config.stream;
    this.group = config.group;
    this.loop = wireLoop(config);
  }

  /** Aborted when the loop is asked to stop; handed to every message. */
  get signal(): AbortSignal {
    return this.loop.stopSwitch.signal;
  }

  /** Where this loop copies its dead letters; `false` for none. */
  get deadLetterStream(): string | false {
    return this.loop.context.options.deadLetterStream;
  }

  /** Starts the loop (idempotent). It runs until `stop()`. */
  start(): void {
    if (this.running || this.loop.stopSwitch.isStopping()) return;
    this.loop.heartbeat.start();
    for (const each of this.loop.beside) each.start();
    this.running = this.run();
  }

  /** The loop's figures now. */
  snapshot(): ConsumerSnapshot {
    return this.loop.counters.snapshot();
  }

  /**
   * Stops the loop: no new reads, the signal aborts, in-flight handlers get up to `timeoutMs`,
   * settled entries are acked, unstarted ones released to peers, the connection closed. Every
   * call gets the same promise (the first call's `timeoutMs` holds): it settles once the loop is
   * down, however many callers (an admin drain, then SIGTERM) asked.
   */
  stop(timeoutMs: number): Promise<void> {
    this.stopped ??= this.loop.shutdown.run(this.running, timeoutMs);
    return this.stopped;
  }

  private async run(): Promise<void> {
    const { context, health, readAhead, acks, retries, heartbeat } = this.loop;
    try {
      while (!context.isStopping()) {
        try {
          await this.beat();
        } catch (err) {
          if (context.isStopping()) break;
          await health.backOff(err);
        }
      }
      await readAhead.release();
      // partitions: the held keys' lanes end (a waiting retry becomes a waiting retry here, the
      // entries parked behind it are released uncharged); what they finished is acked below
      await this.loop.heldKeys?.idle();
      await acks.flush();
    } catch (err) {
      context.logger.error(
        `${context.where}: acks at shutdown failed: ${errorText(err)}; entries stay pending`,
      );
    }
    // (when a step above failed: the lanes still end before the waiting retries go)
    await this.loop.heldKeys?.idle();
    // on its own (it never throws): a failed ack must not keep the waiting retries from peers
    await retries.releaseAll();
    // what its last commits left in the outbox goes on now, not at a peer's next look
    await Promise.all(this.loop.beside.map((each) => each.stop()));
    heartbeat.stop();
  }

  /**
   * One beat: settle what was read ahead when a PEL step follows; ensure the group; drain the own
   * PEL when needed; sweep when due; claim due retries; then read new entries and handle them.
   */
  private async beat(): Promise<void> {
    const { context, health, pace, pause, pel, retries, acks, readAhead, delivery } = this.loop;
    // Redis answered a step of this beat before the read (evidence enough to show 'running')
    let answered = false;
    while (readAhead.inFlight && (health.mustPrepare || pace.due() || pause.due())) {
      // settle what was read ahead before a PEL drain (it would read them again), a sweep or a
      // pause (entries in hand finish)
      const entries = await readAhead.take();
      if (entries.length > 0) await delivery.process(entries, null);
    }
    // a paused group: nothing read, swept or claimed until it is resumed
    if (await pause.holds()) return;
    if (health.needsGroup) {
      await health.createGroup();
      answered = true;
    }
    if (health.needsDrain) {
      await acks.flush();
      const asked = health.drainAsked;
      await pel.drainOwn();
      health.drained(asked);
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
    const { context, limiter, acks, health, readAhead, parked, delivery } = this.loop;
    const { batchSize } = context.options;
    // the XACK sent ahead at the last read failed: back off before more go out (they wait again)
    acks.throwFailed();
    if (limiter.limits) await acks.flush(); // a throttled loop may wait: ack what is done first
    const starts = await limiter.readStarts(batchSize);
    const allowed = starts.count;
    if (context.isStopping()) return;
    // a read sent ahead (no BLOCK) is in or on its way: taken before the acks go out, so the skip
    // look-up of its entries (`dedup`, `newerWins`), sent as it lands, goes before them
    const ahead = readAhead.inFlight ? await settled(readAhead.take()) : null;
    // a full read means a backlog: fetch the next batch while this one is handled (not when rate
    // limited: it may read only what it may start). After a read sent ahead it goes out before
    // the acks: the server answers it first, and the loop reads it while the acks' script runs
    const full = (entries: readonly RawEntry[]): boolean =>
      entries.length >= batchSize && !limiter.limits && !context.isStopping();
    if (ahead?.status === 'fulfilled' && full(ahead.value)) readAhead.fill();
    // the acks of the last beat's batch were sent ahead: their reply is in by now, mostly
    // (recovering from a Redis error, the beat waits for its own instead: it proves Redis healthy
    // only once they are in)
    const lastAcks = health.recovering ? null : settled(acks.landed());
    // this beat's go out now and are answered while the read is handled (no read ahead: before
    // the read parks, on its connection they would wait); a failure is thrown at the next beat
    acks.sendAhead();
    const [ackResult, readResult] = await Promise.all([
      lastAcks ?? settled(acks.landed()),
      ahead ?? settled(this.park(allowed, starts.parkMs)),
    ]);
    parked.end();
    if (readResult.status === 'fulfilled' && ackResult.status === 'fulfilled') health.healthy();
    if (readResult.status === 'fulfilled') {
      const entries = readResult.value;
      limiter.readDone(starts, entries.length);
      if (entries.length > 0) {
        if (ahead === null && full(entries)) readAhead.fill();
        await delivery.process(entries, null, starts.window);
      }
    } else {
      // a reply lost on a dropped link may have delivered entries to us: read the own PEL again
      health.drainNeeded();
    }
    if (ackResult.status === 'rejected') throw ackResult.reason;
    if (readResult.status === 'rejected') throw readResult.reason;
  }

  /**
   * Parks a read of up to `count` new entries. It waits no longer than until the next sweep, the
   * next read of the pause flag or the next retry is due (or than the starts it holds stay good:
   * `startsLastMs`); no single park outlasts
   * `blockMs`. Recovering, it comes back after one park, so the read that proves Redis healthy
   * again ends the backoff streak (and says so) at once: a shared read may wait across rounds.
   */
  private park(count: number, startsLastMs: number): Promise<RawEntry[]> {
    const { context, retries, pace, pause, health, parked } = this.loop;
    const { blockMs } = context.options;
    const now = context.now();
    const retryDueAt = retries.nextDueAt();
    let wait = Math.max(1, Math.min(pace.nextAt, retryDueAt, pause.nextAt) - now);
    wait = Math.min(wait, startsLastMs);
    if (health.recovering) wait = Math.min(wait, blockMs);
    return parked.read(count, wait, blockMs, retryDueAt - now);
  }
}

/** How `promise` settled, without throwing. */
function settled<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
    (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
  );
}
