import { errorText } from '../../codec/codecs';
import type { StreamsClient } from '../../redis/stream-roles';
import { firstFew, NO_LONGER_OURS, type ClaimedBatch, type LoopContext } from '../context';

/**
 * A set of entries this consumer holds and keeps claimed: the batch in hand, the entries on the
 * dead-letter path, those read ahead, the retries that wait. The set is touched as one: its clock
 * is that of its least recently touched entry. Only the heartbeat moves the clock forward.
 */
export class HeldEntries implements ClaimedBatch {
  private touched: number;

  /** @param ids the entries held now (read at each tick) */
  constructor(
    private readonly entryIds: () => Iterable<string>,
    touchedAt: number,
  ) {
    this.touched = touchedAt;
  }

  /** The entries held now. */
  ids(): string[] {
    return [...this.entryIds()];
  }

  /** When the set was last claimed or touched (`now()` ms). */
  get touchedAt(): number {
    return this.touched;
  }

  /** Entries claimed at `at` joined the set; `alone`: the set held nothing before them. */
  joined(at: number, alone: boolean): void {
    this.touched = alone ? at : Math.min(this.touched, at);
  }

  /** The set is touched on the heartbeat's next tick, whatever its clock said. */
  touchSoon(): void {
    this.touched = 0;
  }

  /** The heartbeat's side: the ids to touch when the set is due, `[]` when not. */
  dueAt(now: number, minIdleMs: number): string[] {
    if (now - this.touched < minIdleMs / 2) return [];
    return this.ids();
  }

  /** The heartbeat's side: touched at `now` (or, when the touch failed, due again at once). */
  touchedNow(now: number): void {
    this.touched = now;
  }
}

/** The kinds of held entries, in the order a tick touches them. */
export type HeldKind = 'inHand' | 'deadLetters' | 'readAhead' | 'retries' | 'heldKeys';
const KINDS: readonly HeldKind[] = ['inHand', 'deadLetters', 'readAhead', 'retries', 'heldKeys'];

/**
 * Keeps held entries claimed: every `minIdleMs / 4` it re-claims (`XCLAIM ... JUSTID`) each set
 * held longer than `minIdleMs / 2`, so peers do not reclaim live or finished work nor dead-letter
 * an entry a second time. It never takes an entry back from a peer: after this process did not
 * answer for `minIdleMs` (a stop of the process, a long synchronous stretch), a peer may have
 * taken some over; those are named once and left to it. The only code that touches held entries.
 */
export class Heartbeat {
  private readonly held = new Map<HeldKind, HeldEntries>();
  private timer: NodeJS.Timeout | null = null;
  /** Held entries a peer took over: named once, not touched again. */
  private lost = new Set<string>();

  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'consumer' | 'where' | 'logger' | 'options' | 'now'
    >,
    private readonly client: Pick<StreamsClient, 'touch'>,
  ) {}

  /** Keeps `ids` claimed (as `kind`) until {@link drop}; they were claimed at `touchedAt`. */
  hold(kind: HeldKind, ids: () => Iterable<string>, touchedAt = this.context.now()): HeldEntries {
    return this.keep(kind, new HeldEntries(ids, touchedAt));
  }

  /** Keeps the entries of `held` claimed (as `kind`) until {@link drop}. */
  keep(kind: HeldKind, held: HeldEntries): HeldEntries {
    this.held.set(kind, held);
    return held;
  }

  /** Stops keeping the `kind` entries claimed (settled, or handed on). */
  drop(kind: HeldKind): void {
    this.held.delete(kind);
  }

  /** Ticks every `max(25, minIdleMs / 4)` ms until {@link stop}. */
  start(): void {
    const period = Math.max(25, Math.floor(this.context.options.minIdleMs / 4));
    this.timer = setInterval(() => void this.tick(), period);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Touches every held set that is due; a failed touch is retried on the next tick. */
  async tick(): Promise<void> {
    const sets: Array<Promise<void>> = [];
    for (const kind of KINDS) {
      const held = this.held.get(kind);
      if (held) sets.push(this.touch(held));
    }
    await Promise.all(sets);
    if (this.lost.size > 0) this.forgetSettled();
  }

  private async touch(held: HeldEntries): Promise<void> {
    const { stream, group, consumer, options, logger, where } = this.context;
    const now = this.context.now();
    const due = held.dueAt(now, options.minIdleMs);
    const ids = this.lost.size === 0 ? due : due.filter((id) => !this.lost.has(id));
    if (ids.length === 0) return;
    held.touchedNow(now);
    try {
      const lost = await this.client.touch(stream, group, consumer, ids);
      if (lost.length === 0) return;
      for (const id of lost) this.lost.add(id);
      logger.warn(`${where}: entries ${firstFew(lost)} are ${NO_LONGER_OURS}`);
    } catch (err) {
      logger.warn(`${where}: heartbeat failed (${errorText(err)}); retrying on the next tick`);
      held.touchSoon();
    }
  }

  /** Keeps only the lost ids still held (the rest settled or were handed on). */
  private forgetSettled(): void {
    const stillHeld = new Set<string>();
    for (const held of this.held.values()) for (const id of held.ids()) stillHeld.add(id);
    this.lost = new Set([...this.lost].filter((id) => stillHeld.has(id)));
  }
}
