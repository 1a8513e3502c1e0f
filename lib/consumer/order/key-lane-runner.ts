import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { HeldKeys } from './held-keys';
import type { KeyAckGate } from './key-ack-gate';
import { keyLanes } from './key-lanes';
import { LaneWaves, type LaneVerdict, type NotStarted } from './lane-waves';
import type { LoopContext } from '../context';
import { takeOneStart, type StartLimiter, type StartSlots } from '../limits';

/** What running keyed lanes needs besides the context. */
export interface KeyLaneParts {
  readonly keyOf: (message: StreamMessage<unknown>) => string | undefined;
  /** A key's next entry starts once the XACK of its completed ones is in. */
  readonly gate: Pick<KeyAckGate, 'blocked' | 'isOpen' | 'nextAck' | 'completed' | 'takeFailure'>;
  /** The loop's `concurrency`, shared with the lanes of held keys. */
  readonly slots: Pick<StartSlots, 'take' | 'give'>;
  /**
   * The lane of a held key takes a start for each entry; a read's entries took theirs, and one
   * that begins after their window ended takes a start of the current one.
   */
  readonly limiter: Pick<StartLimiter, 'take' | 'refund' | 'holds'>;
  /** Partitions: a failed entry waits for its retry with its key's later entries behind it. */
  readonly held?: Pick<HeldKeys, 'divert' | 'hold'>;
}

/** What became of a run's entries besides the verdicts the runner keeps. */
export interface LanesOutcome {
  /** Entries handed to a held key's lane (it settles them). */
  readonly handed: ReadonlySet<string>;
  /** Entries left pending, never started, after an XACK failed (the own PEL drain runs them). */
  readonly leftPending: ReadonlySet<string>;
  /** That XACK's failure, when this run's wait sent it (reported once, for the backoff). */
  readonly ackFailure?: { error: unknown };
}

/** Where the starts of a run come from. */
interface RunStarts {
  /** A held key's lane: each attempt takes its own start. */
  readonly heldLane: boolean;
  /** A read's run: the rate-limit window of the starts the read took. */
  readonly window: number | undefined;
}

/**
 * One attempt of an entry; a verdict at once when the handler returned synchronously (no promise
 * per entry), else a promise of it.
 */
export type LaneStart = (message: StreamMessage<unknown>) => LaneVerdict | Promise<LaneVerdict>;

/**
 * Runs the entries of one read (or of a held key's lane) in lanes by key (docs/partitions.md
 * "Order", docs/delivery.md "Duplicates and stale replays"): a key's entries one at a time in
 * stream order, the next one only once the XACK of the one before is in ({@link KeyAckGate});
 * meanwhile the other keys run, so the acks of many keys share one XACK. Every handler call takes
 * a slot of the loop's `concurrency` ({@link StartSlots}) and gives it back when it returns; a key
 * waiting for its acknowledgement holds none. A held key's lane asks the rate limit for every
 * start, as a read does for its entries.
 */
export class KeyLaneRunner {
  constructor(
    private readonly context: Pick<LoopContext, 'isStopping'>,
    private readonly parts: KeyLaneParts,
  ) {}

  /**
   * Runs `messages`; `start` makes one attempt (the caller records what started and settled). A
   * lane waits only when it must (its key's XACK, a slot, a handler's promise): the entries that
   * can run at once run without a promise of their own.
   * @param heldLane true for the run of a held key's lane: nothing is diverted, and each start
   *   takes a start of the rate limit.
   * @param startsWindow a read's run: the rate-limit window of the starts the read took; starts it
   *   does not use are given back in it.
   */
  async run(
    messages: StreamMessage<unknown>[],
    heldLane: boolean,
    start: LaneStart,
    startsWindow?: number,
  ): Promise<LanesOutcome> {
    const { keyOf, held, limiter, gate } = this.parts;
    const starts: RunStarts = { heldLane, window: startsWindow };
    // starts a read took and did not use go back to their window; a held lane takes its starts
    // one by one, so it has none to give back
    const giveBack = (count: number): void => {
      if (!heldLane) limiter.refund(count, startsWindow);
    };
    const run = new LaneWaves({
      keyOf,
      gate,
      held,
      isStopping: () => this.context.isStopping(),
      attempt: (message) => this.attempt(message, starts, start),
      refund: giveBack,
    });
    let runnable = messages;
    if (held && !heldLane) {
      // the entries of a held key wait behind its retry (the same array when none is held)
      runnable = held.divert(messages, keyOf);
      if (runnable !== messages) {
        const kept = new Set(runnable);
        for (const m of messages) if (!kept.has(m)) run.handed.add(m.entryId);
        // their lane takes their starts when it runs them
        giveBack(run.handed.size);
      }
    }
    await run.run(keyLanes(runnable, keyOf));
    const { handed, leftPending } = run;
    if (leftPending.size === 0) return { handed, leftPending };
    // read again by the drain, which takes their starts then
    giveBack(leftPending.size);
    return { handed, leftPending, ackFailure: (await gate.takeFailure()) ?? undefined };
  }

  /**
   * One entry whose key's turn came ({@link LaneWaves} waited for its XACK): a slot (and, in a
   * held lane or past the read's window, a start), then the attempt. When a slot is free the
   * attempt is made at once (a synchronous handler's verdict comes back without a promise); a slot
   * to wait for or a start to take go to {@link attemptLater}.
   */
  private attempt(
    message: StreamMessage<unknown>,
    starts: RunStarts,
    start: LaneStart,
  ): LaneVerdict | NotStarted | Promise<LaneVerdict | NotStarted> {
    const { gate, slots } = this.parts;
    if (this.context.isStopping()) return 'stopping';
    // a failed XACK (the wave's wait ended with it): nothing starts until the own PEL drain
    if (gate.blocked) return 'blocked';
    if (this.takesStart(starts)) return this.attemptLater(message, starts, start);
    const slot = slots.take();
    if (slot) return this.attemptLater(message, starts, start, slot);
    let verdict: LaneVerdict | Promise<LaneVerdict>;
    try {
      verdict = start(message);
    } catch (err) {
      slots.give();
      throw err;
    }
    if (!(verdict instanceof Promise)) {
      slots.give();
      return verdict;
    }
    return verdict.finally(() => slots.give());
  }

  /**
   * {@link attempt} that waits: for a slot, then (in a held lane, or once the read's window is
   * over: a start counts in the window it begins in) for a start of the rate limit.
   */
  private async attemptLater(
    message: StreamMessage<unknown>,
    starts: RunStarts,
    start: LaneStart,
    slotTaken?: Promise<void>,
  ): Promise<LaneVerdict | NotStarted> {
    const { gate, slots, limiter } = this.parts;
    const slot = slotTaken ?? slots.take();
    if (slot) await slot;
    try {
      if (this.context.isStopping()) return 'stopping';
      if (this.takesStart(starts) && !(await takeOneStart(limiter, () => !gate.blocked)))
        return gate.blocked ? 'blocked' : 'stopping';
      if (gate.blocked) return 'blocked';
      return await start(message);
    } finally {
      slots.give();
    }
  }

  /** A held lane's attempt takes its own start; so does one of a read whose window ended. */
  private takesStart(starts: RunStarts): boolean {
    return starts.heldLane || !this.parts.limiter.holds(starts.window);
  }
}
