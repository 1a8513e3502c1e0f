import {
  isPartitionCount,
  PARTITION_KEY_FIELD,
  partitionOf,
  partitionStreamOf,
} from '../codec/partition-key';
import { describeValue as describe } from '../config/describe-value';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { PartitionLeases } from '../redis/stream-roles';

/** Where a keyed publish goes: the partition stream, and the field that records the key. */
export interface KeyedTarget {
  readonly stream: string;
  /** `['pkey', key]`, appended to the entry's fields. */
  readonly keyFields: readonly string[];
}

/**
 * Routes a keyed publish (`{ key }`) of a partitioned stream to its partition
 * (docs/partitions.md "Wire format"): `<stream>:p:<crc32(key) mod count>`. The count is the
 * stream's stored one (read once per stream and kept: it never changes); a call that says
 * `partitions` stores it when none is (SET NX) and fails when it differs.
 */
export class PartitionRouter {
  private readonly counts = new Map<string, number>();

  /**
   * @param configured `producer.partitions`: a call that says no `partitions` uses these.
   */
  constructor(
    private readonly leases: () => PartitionLeases | undefined,
    private readonly configured: Readonly<Record<string, number>> = {},
  ) {}

  /**
   * Stores the configured counts unless stored (SET NX) and fails on a stored one that differs.
   * @throws EchoStreamConfigError naming the stream, the stored count and the configured one.
   */
  async checkConfigured(): Promise<void> {
    if (Object.keys(this.configured).length === 0) return; // no connection opened for nothing
    const leases = this.leases();
    if (!leases) return;
    for (const [stream, count] of Object.entries(this.configured)) {
      const stored = await leases.ensureCount(stream, count);
      if (stored !== count)
        throw new EchoStreamConfigError(
          `StreamProducer: stream '${stream}' is stored with ${stored} partition(s), configured ` +
            `with ${count} (producer.partitions); the count of a partitioned stream is fixed`,
        );
      this.counts.set(stream, stored);
    }
  }

  /**
   * @throws TypeError (as a rejection, nothing written) on a key that is not a non-empty string,
   *   a bad `partitions`, a stream with no stored count and no `partitions`, or a `partitions`
   *   that differs from the stored count.
   */
  async route(
    method: string,
    stream: string,
    key: unknown,
    partitions: unknown,
  ): Promise<KeyedTarget> {
    if (typeof key !== 'string' || key.length === 0)
      throw new TypeError(
        `StreamProducer.${method}(): option 'key' must be a non-empty string, got ${describe(key)}`,
      );
    if (partitions !== undefined && !isPartitionCount(partitions))
      throw new TypeError(
        `StreamProducer.${method}(): option 'partitions' must be an integer from 1 to 1024, got ${describe(partitions)}`,
      );
    const count = await this.countOf(
      method,
      stream,
      (partitions as number | undefined) ?? this.configured[stream],
    );
    return {
      stream: partitionStreamOf(stream, partitionOf(key, count)),
      keyFields: [PARTITION_KEY_FIELD, key],
    };
  }

  private async countOf(
    method: string,
    stream: string,
    configured: number | undefined,
  ): Promise<number> {
    let stored = this.counts.get(stream);
    const leases = this.leases();
    if (stored === undefined && leases) {
      const found =
        configured === undefined
          ? await leases.storedCount(stream)
          : await leases.ensureCount(stream, configured);
      if (found !== null) this.counts.set(stream, (stored = found));
    }
    if (stored === undefined)
      throw new TypeError(
        `StreamProducer.${method}(): stream '${stream}' has no stored partition count: publish ` +
          `with { key, partitions } once, or start its handler with 'partitions' first`,
      );
    if (configured !== undefined && configured !== stored)
      throw new TypeError(
        `StreamProducer.${method}(): stream '${stream}' is stored with ${stored} partition(s), ` +
          `this call says ${configured}; the count of a partitioned stream is fixed`,
      );
    return stored;
  }
}
