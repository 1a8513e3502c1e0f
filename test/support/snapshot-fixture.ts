/** A loop snapshot with every figure set, for tests of what renders snapshots. */
import type { ConsumerSnapshot } from '../../lib/interfaces/consumer-snapshot.interface';

/** `orders`/`billing` on `host-1`, running, with distinct non-zero figures; `overrides` win. */
export function snapshotFixture(overrides: Partial<ConsumerSnapshot> = {}): ConsumerSnapshot {
  return {
    stream: 'orders',
    group: 'billing',
    consumer: 'host-1',
    handler: 'Billing.charge',
    state: 'running',
    totalRead: 10,
    totalAcked: 8,
    totalDlq: 1,
    totalErrors: 3,
    totalDeleted: 2,
    totalDuplicates: 5,
    totalStale: 6,
    totalFenced: 9,
    retrying: 4,
    totalRetries: 7,
    tpsIn: 1.5,
    tpsOut: 0.8,
    lastError: null,
    ...overrides,
  };
}
