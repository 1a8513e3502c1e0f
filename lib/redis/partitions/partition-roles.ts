/**
 * What the library may ask of Redis about partitioned streams (docs/partitions.md): a leaf of
 * types, as stream-roles.ts.
 */

/** What a lease heartbeat saw: the live members of the group and who owns each partition. */
export interface LeaseView {
  /** Live members, sorted by name (every process sorts the same list the same way). */
  readonly members: readonly string[];
  /** Per partition (index = partition): its owner (`null`: free or expired) and generation. */
  readonly owners: ReadonlyArray<{ readonly owner: string | null; readonly generation: number }>;
}

/**
 * The partition count and leases of partitioned streams (docs/partitions.md "Leases"): scripts
 * that compare and set on the server's clock.
 */
export interface PartitionLeases {
  /** Stores `count` as the stream's partition count unless one is stored (SET NX); the stored one. */
  ensureCount(stream: string, count: number): Promise<number>;
  /** The stored partition count of `stream`; `null` when none is stored. */
  storedCount(stream: string): Promise<number | null>;
  /**
   * Renews `member` and its leases of the `held` partitions; the live members and every
   * partition's owner.
   */
  heartbeat(
    stream: string,
    group: string,
    member: string,
    count: number,
    leaseMs: number,
    held: readonly number[],
  ): Promise<LeaseView>;
  /**
   * Takes the leases of `partitions` that are free, expired or recorded for `member` (its earlier
   * run); the generation grows on each. A generation per partition (0: not taken).
   */
  acquire(
    stream: string,
    group: string,
    member: string,
    leaseMs: number,
    partitions: readonly number[],
  ): Promise<number[]>;
  /** Frees the leases of `partitions` that `member` holds; `leave`: it leaves the members too. */
  release(
    stream: string,
    group: string,
    member: string,
    partitions: readonly number[],
    leave: boolean,
  ): Promise<number>;
  /**
   * The leases of `group` as they stand (read only): per partition its owner (`null`: free or
   * expired), generation and the ms its lease has left.
   */
  table(stream: string, group: string, count: number): Promise<LeaseRow[]>;
}

/** One partition's lease, as `PartitionLeases.table` reads it. */
export interface LeaseRow {
  readonly partition: number;
  readonly owner: string | null;
  readonly generation: number;
  /** Ms until the lease ends (0 when free or expired). */
  readonly leftMs: number;
}

/** What one probe of a group's PEL on one stream found. */
export interface PendingProbeRow {
  /** Entries pending in the group, all consumers; `null` when it could not tell (no group, ...). */
  readonly pending: number | null;
  /** One of them is idle at least the probe's `minIdleMs`: a sweep would claim or dead-letter it. */
  readonly idle: boolean;
}

/**
 * The PELs of a partitioned handler's streams read together (docs/partitions.md "Idle cost"): one
 * script call per hash slot instead of an XPENDING per partition.
 */
export interface PendingProbes {
  /** The PEL of `group` on each of `streams` (in order): its size, and whether one is idle. */
  probe(group: string, streams: readonly string[], minIdleMs: number): Promise<PendingProbeRow[]>;
}
