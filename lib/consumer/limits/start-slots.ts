/**
 * The `concurrency` of one loop as slots: a handler call takes one before it starts and gives it
 * back when it returns, whoever runs it (the batch in hand or a held key's lane, docs/partitions.md
 * "Order"), so the loop never has more handler calls at once than `concurrency`. Waiters are
 * served in the order they asked. Nothing waits while holding a slot: a key waiting for its
 * acknowledgement or a retry waiting for its delay holds none.
 */
export class StartSlots {
  private free: number;
  private readonly waiters: Array<() => void> = [];

  /** @param size `concurrency` (at least 1). */
  constructor(readonly size: number) {
    this.free = Math.max(1, size);
  }

  /** Slots in use now. */
  get inUse(): number {
    return Math.max(1, this.size) - this.free;
  }

  /**
   * Takes a slot: `null` when one was free (taken at once, no promise), else a promise that
   * settles once one is handed over.
   */
  take(): Promise<void> | null {
    if (this.free > 0 && this.waiters.length === 0) {
      this.free--;
      return null;
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Gives a slot back: to the first waiter when there is one. */
  give(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}
