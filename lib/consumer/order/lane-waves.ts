import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { HeldKeys } from './held-keys';
import type { KeyAckGate } from './key-ack-gate';

/** How one attempt of an entry in a keyed lane ended. */
export type LaneVerdict =
  /** The handler returned: its ack is due before the key's next entry starts. */
  | 'ok'
  /** It failed or was refused, settled with the batch (dead letter, retry scheduler). */
  | 'settled'
  /** It failed and is retried in place after `retryInMs` (partitions: its key is held). */
  | { readonly retryInMs: number; readonly error: unknown };

/** Why an entry of a lane did not start. */
export type NotStarted = 'stopping' | 'blocked';

/** What one run of lanes needs ({@link KeyLaneRunner} builds it for each run). */
export interface LaneWavesParts {
  readonly keyOf: (message: StreamMessage<unknown>) => string | undefined;
  readonly gate: Pick<KeyAckGate, 'blocked' | 'isOpen' | 'nextAck' | 'completed'>;
  /** Partitions: a failed entry waits for its retry with its key's later entries behind it. */
  readonly held?: Pick<HeldKeys, 'hold'>;
  isStopping(): boolean;
  /** One attempt of an entry whose key's turn came: a verdict, at once or later. */
  attempt(
    message: StreamMessage<unknown>,
  ): LaneVerdict | NotStarted | Promise<LaneVerdict | NotStarted>;
  /** Gives back the starts of `count` entries this run will not start (handed to a held key). */
  refund(count: number): void;
}

/** A lane of a run and the index of its next entry. */
interface LaneState {
  readonly lane: readonly StreamMessage<unknown>[];
  at: number;
}

/**
 * One run of a read's lanes by key (docs/partitions.md "Order"), in waves: every lane goes as far
 * as it can at once (a synchronous handler's entries one after the other, without a promise), up
 * to an entry whose key waits for the XACK of the one before; then one wait for the next XACK
 * reply, shared by every lane of the wave, and again, until no lane waits. A lane whose attempt
 * returns a promise (a handler that awaits, a slot or a start to wait for) goes on by itself,
 * in waves of its own.
 */
export class LaneWaves {
  /** Entries handed to a held key's lane (it settles them). */
  readonly handed = new Set<string>();
  /** Entries left pending, never started, after an XACK failed (the own PEL drain runs them). */
  readonly leftPending = new Set<string>();
  /** Lanes that went on by themselves. */
  private readonly inFlight: Array<Promise<void>> = [];

  constructor(private readonly parts: LaneWavesParts) {}

  /** Runs `lanes` until every one of them ended. */
  async run(lanes: readonly (readonly StreamMessage<unknown>[])[]): Promise<void> {
    await this.waves(lanes.map((lane) => ({ lane, at: 0 })));
    // each may hand on to more before it ends
    while (this.inFlight.length > 0) await Promise.all(this.inFlight.splice(0));
  }

  private async waves(states: LaneState[]): Promise<void> {
    let waiting = states;
    while (waiting.length > 0) {
      const next: LaneState[] = [];
      for (const state of waiting) if (this.advance(state)) next.push(state);
      if (next.length === 0) return;
      // false: an XACK failed, and the lanes' next attempts say 'blocked'
      await this.parts.gate.nextAck();
      waiting = next;
    }
  }

  /**
   * Runs a lane from where it is while its entries start and end at once. `true`: it stopped at
   * an entry whose key waits for an XACK; `false`: it ended, or goes on by itself.
   */
  private advance(state: LaneState): boolean {
    const { keyOf, gate, isStopping, attempt } = this.parts;
    const { lane } = state;
    for (; state.at < lane.length; state.at++) {
      const message = lane[state.at];
      const key = keyOf(message);
      // the key's completed entries acknowledged first (after a failed XACK, or at a stop, the
      // attempt says so without a wait)
      if (key !== undefined && gate.isOpen(key) && !gate.blocked && !isStopping()) return true;
      const attempted = attempt(message);
      if (attempted instanceof Promise) {
        this.inFlight.push(this.goOn(state, message, key, attempted));
        return false;
      }
      if (!this.settle(state, message, key, attempted)) return false;
    }
    return false;
  }

  private async goOn(
    state: LaneState,
    message: StreamMessage<unknown>,
    key: string | undefined,
    attempted: Promise<LaneVerdict | NotStarted>,
  ): Promise<void> {
    if (!this.settle(state, message, key, await attempted)) return;
    state.at++;
    await this.waves([state]);
  }

  /** What became of an attempt; `true`: the lane goes on with its next entry. */
  private settle(
    state: LaneState,
    message: StreamMessage<unknown>,
    key: string | undefined,
    verdict: LaneVerdict | NotStarted,
  ): boolean {
    const { lane, at } = state;
    if (verdict === 'stopping') return false;
    if (verdict === 'blocked') {
      for (let j = at; j < lane.length; j++) this.leftPending.add(lane[j].entryId);
      return false;
    }
    if (verdict === 'ok') this.parts.gate.completed(message, key);
    if (typeof verdict === 'string') return true;
    // its retry waits outside this run, the key's later entries behind it
    const rest = lane.slice(at + 1);
    // an entry without a key holds only itself
    this.parts.held?.hold(
      key ?? `\u0000${message.entryId}`,
      message,
      verdict.error,
      verdict.retryInMs,
      rest,
    );
    this.handed.add(message.entryId);
    for (const m of rest) this.handed.add(m.entryId);
    this.parts.refund(rest.length);
    return false;
  }
}
