import { Injectable } from '@nestjs/common';

const REMEMBERED = 10_000;

/**
 * What billing has charged, keyed by branded id: delivery is at-least-once, so the handler
 * checks here first and skips an order it already charged (a real app keeps this in its
 * database, written in the same transaction as the side effect).
 */
@Injectable()
export class OrderLedger {
  private readonly charged = new Set<string>();
  /** Orders charged. */
  total = 0;
  /** Deliveries skipped because the order was charged already. */
  duplicates = 0;

  /** True when `id` was charged already (and counts the duplicate). */
  seen(id: string): boolean {
    if (!this.charged.has(id)) return false;
    this.duplicates++;
    return true;
  }

  /** Records `id` as charged (remembers the most recent 10,000 ids). */
  record(id: string): void {
    this.charged.add(id);
    this.total++;
    if (this.charged.size > REMEMBERED) {
      const oldest = this.charged.values().next().value;
      if (oldest !== undefined) this.charged.delete(oldest);
    }
  }
}
