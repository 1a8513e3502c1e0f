import type { StreamCodec } from './codec.interface';

/** Options of {@link StreamTransaction.publish}. */
export interface TransactionPublishOptions<T = unknown> {
  /**
   * The branded id to write in the output's `id` field (a non-empty string), e.g. to pass an
   * upstream id on unchanged.
   * @default an id derived from the source entry's branded id and the output's position among
   *   this attempt's publishes, the same on every replay (`derivedBrandedId`)
   */
  id?: string;
  /**
   * The codec that turns `payload` into the output's fields.
   * @default the module's producer codec
   */
  codec?: StreamCodec<T>;
}

/**
 * The writes of one entry of an exactly-once handler (`m.tx`): outputs published and keys set,
 * committed together with the entry's acknowledgement, or not at all. Nothing is written when a
 * method is called: the writes are collected, and committed once the handler returns; when it
 * throws, none is. A retry starts again from no writes.
 *
 * Each method checks its arguments at once and throws a `TypeError` for a bad one, recording
 * nothing. On a Redis Cluster every key written, and a publish's stream, must be in the source
 * stream's hash slot: carry {@link slotTag} in its name (`{payments}:balance:7`).
 */
export interface StreamTransaction {
  /**
   * The hash tag, braces included, that keys must carry on a Cluster to share the source
   * stream's slot (`{payments}`; for a partitioned source, the partition stream's tag).
   */
  readonly slotTag: string;
  /**
   * Publishes `payload` to `stream` with the entry's commit. Keyed publish to a partitioned
   * stream is not supported yet.
   * @returns the branded id the output will carry.
   */
  publish<T>(stream: string, payload: T, options?: TransactionPublishOptions<T>): string;
  /**
   * Sets string `key` to `value` with the entry's commit.
   * @param options `pxMs`: the key's time to live in milliseconds (a positive integer).
   *   @default no expiry
   */
  set(key: string, value: string, options?: { pxMs?: number }): void;
  /** Adds `by` (an integer of at most 15 digits, negative to subtract) to counter `key`. */
  incrBy(key: string, by: number): void;
  /** Sets `field` of hash `key` to `value` with the entry's commit. */
  hset(key: string, field: string, value: string): void;
  /** Deletes `key` with the entry's commit. */
  del(key: string): void;
}
