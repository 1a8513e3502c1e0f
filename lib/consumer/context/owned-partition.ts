/**
 * The partition a loop owns and reads, with the generation of its lease on it (docs/partitions.md);
 * the leases themselves are kept in Redis by lib/redis/partitions/partition-leases.ts.
 */
export interface OwnedPartition {
  /** Which partition of the stream (`<stream>:p:<index>`). */
  readonly index: number;
  /** The generation of the lease this loop holds (each take-over bumps it); handed to handlers. */
  readonly generation: number;
}
