import type { LifecycleClient } from '../redis/operator';

/** The lock commands a lease needs. */
export type LeaseClient = Pick<LifecycleClient, 'acquireLock' | 'renewLock' | 'releaseLock'>;

/**
 * A lock in Redis that one process holds for one stream's retention (internal). It expires after
 * `ttlMs` unless renewed, so a crashed holder blocks retention for `ttlMs` at most. The holder
 * keeps it from one interval to the next (`acquire` also succeeds when this token holds it), so
 * the same process trims interval after interval while it lives, and exactly one does.
 */
export class RetentionLease {
  private lost = false;

  constructor(
    private readonly client: LeaseClient,
    /** The lock key. */
    readonly key: string,
    private readonly token: string,
    /** How long the lock lives without a renewal. */
    readonly ttlMs: number,
  ) {}

  /** Takes the lock (SET NX PX), or extends it when this token holds it already. */
  async acquire(): Promise<boolean> {
    this.lost = false;
    if (await this.client.acquireLock(this.key, this.token, this.ttlMs)) return true;
    return this.client.renewLock(this.key, this.token, this.ttlMs);
  }

  /** Extends the lock; `false` (for good, until the next `acquire`) once it was lost. */
  async renew(): Promise<boolean> {
    if (this.lost) return false;
    if (!(await this.client.renewLock(this.key, this.token, this.ttlMs))) this.lost = true;
    return !this.lost;
  }

  /**
   * Runs `work` while renewing the lock every third of its TTL, so a slow archive method does not
   * let it expire under the holder's feet.
   */
  async hold<T>(work: () => Promise<T>): Promise<T> {
    const timer = setInterval(
      () => void this.renew().catch(() => undefined),
      Math.max(50, Math.floor(this.ttlMs / 3)),
    );
    timer.unref();
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /** Deletes the lock if this token holds it (at shutdown: a peer takes over at once). */
  async release(): Promise<void> {
    await this.client.releaseLock(this.key, this.token);
  }
}
