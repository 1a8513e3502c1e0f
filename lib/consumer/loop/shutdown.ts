import type { AckRecordSource, AckBuffer, DeadLetterPath, Settlement } from '../settle';
import { errorText } from '../../codec/codecs';
import type { Delivery } from '../handle';
import type { Heartbeat } from '../health';
import type { LoopContext } from '../context';
import type { ParkedRead, ReadAhead } from '../read';
import type { RetryClaims } from '../recover';
import type { RetryScheduler } from '../retry';
import { stillRunning } from './shutdown-warning';

/** Who says the loop is stopping, and that a stop gave up on its handlers; owned by the loop. */
export class StopSwitch {
  private readonly abort = new AbortController();
  private stopping = false;
  private abandoned = false;

  /** Aborted at stop; handed to every message. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** True once {@link stop} was called (an arrow: handed around as is, as the context's). */
  readonly isStopping = (): boolean => this.stopping;

  /** True once {@link abandon} was called. */
  readonly isAbandoned = (): boolean => this.abandoned;

  /** No new reads from now on; the signal aborts. */
  stop(): void {
    this.stopping = true;
    this.abort.abort();
  }

  /** The stop gave up waiting: the loop's outcome of the batch in hand is dropped. */
  abandon(): void {
    this.abandoned = true;
  }
}

/** What a stop needs besides the context. */
export interface ShutdownParts {
  readonly stopSwitch: Pick<StopSwitch, 'stop' | 'abandon'>;
  readonly parked: Pick<ParkedRead, 'wakeForStop'>;
  readonly heartbeat: Pick<Heartbeat, 'stop'>;
  readonly delivery: Pick<Delivery, 'inHand'>;
  readonly acks: Pick<AckBuffer, 'take' | 'send' | 'landed'>;
  readonly readAhead: Pick<ReadAhead, 'takeQuietly'>;
  readonly settlement: Pick<Settlement, 'release'>;
  readonly scheduler: Pick<RetryScheduler, 'route'>;
  readonly retries: Pick<RetryClaims, 'releaseAll'>;
  readonly deadLetters: Pick<DeadLetterPath, 'inFlight'>;
  /** `dedup` / `newerWins`: the records of the entries that finished; absent: none. */
  readonly records?: Pick<AckRecordSource, 'handled'>;
  /** Closes the loop's connection (a no-op when it is shared). */
  closeClient(): Promise<void>;
}

/**
 * The loop's stop: no new reads, the signal aborts, in-flight handlers get up to `timeoutMs`. When
 * they take longer, what settled is acked, what never started is released to peers, the waiting
 * retries too, and a warning says what still runs. Then the connection is closed.
 */
export class Shutdown {
  constructor(
    private readonly context: Pick<LoopContext, 'where' | 'logger' | 'counters'>,
    private readonly parts: ShutdownParts,
  ) {}

  /** Stops the loop whose run is `running` (`null`: never started). */
  async run(running: Promise<void> | null, timeoutMs: number): Promise<void> {
    const { counters, logger, where } = this.context;
    const { stopSwitch, parked, deadLetters, heartbeat } = this.parts;
    stopSwitch.stop();
    if (!running) {
      counters.setState('stopped');
      await this.parts.closeClient();
      return;
    }
    counters.setState('stopping');
    void parked.wakeForStop();
    const finished = await settleWithin(running, timeoutMs);
    if (!finished) {
      stopSwitch.abandon();
      const inHandlers = await this.giveUpOnHandlers();
      logger.warn(`${where}: ${stillRunning(inHandlers, deadLetters.inFlight, timeoutMs)}`);
    }
    heartbeat.stop();
    await this.parts.closeClient();
    counters.setState('stopped');
  }

  /**
   * `stop()` gave up waiting for a handler: acks what settled (the pending acks and the entries of
   * the batch in hand that finished), releases the entries never started and the retries that wait
   * (with the failures of the batch in hand: they wait like any other), as a stop that did not time
   * out would. Returns the entries still in a handler: they stay pending.
   */
  private async giveUpOnHandlers(): Promise<string[]> {
    const { acks, readAhead, settlement, scheduler, retries } = this.parts;
    const inHand = this.parts.delivery.inHand;
    const held = inHand?.batch;
    // the XACK sent ahead is answered first: when it failed, its acks wait again and go with these
    await acks.landed().catch(() => undefined);
    const acked = acks.take();
    if (held) {
      const finished = held.ok.splice(0);
      // their records go out with their ack, as they would have after the batch
      if (inHand) this.parts.records?.handled(inHand.messages, finished);
      acked.push(...finished);
    }
    const unsettled = held ? [...held.unsettled] : [];
    const unstarted = unsettled.filter((id) => !held?.started.has(id));
    for (const entry of await readAhead.takeQuietly()) unstarted.push(entry.entryId);
    try {
      if (acked.length > 0) await acks.send(acked);
      // read-ahead entries are fresh reads: absent from the held counts, their count was 1
      await settlement.release(unstarted, inHand?.counts ?? null, 'unstarted');
    } catch (err) {
      this.context.logger.error(
        `${this.context.where}: settling at shutdown failed: ${errorText(err)}; entries stay pending`,
      );
    }
    // the loop never routes this batch's failures now; final ones (no dead-letter work starts
    // once stopping) stay pending for whoever takes them over after minIdleMs
    if (held) scheduler.route(held.failed.splice(0));
    await retries.releaseAll();
    return unsettled.filter((id) => held?.started.has(id));
  }
}

/** True when `promise` settles within `ms`; the timer never outlives the wait. */
export function settleWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
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
