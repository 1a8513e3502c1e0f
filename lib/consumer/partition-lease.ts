/** The partition a loop reads and the generation of its lease on it (docs/partitions.md). */
export interface PartitionLease {
  readonly index: number;
  readonly generation: number;
}
