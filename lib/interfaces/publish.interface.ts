import type { CodecOption } from './codec.interface';

/** Options of `StreamProducer.publishMany()`. */
export interface PublishManyOptions {
  /**
   * Trims the stream to about this many entries on each write (`XADD ... MAXLEN ~ n`); no
   * trimming when absent.
   */
  maxLen?: number;
  /**
   * How the payload becomes stream fields (docs/publishing.md "Wire format").
   * @default 'json'
   */
  codec?: CodecOption;
  /**
   * Durable publish: after the write, wait until this many replicas have it (`WAIT replicas
   * replicaTimeoutMs`, the last command of the write's pipeline), else reject with
   * `EchoStreamReplicationError` (the entries are written on the master all the same). An integer
   * >= 0; 0 or absent: no WAIT (nothing more is sent).
   * @see docs/scale.md "Durable publish" (what it does and does not promise)
   */
  replicas?: number;
  /**
   * With `replicas`: how long the server waits for them, in ms (an integer from 1 to 600000).
   * A publish then waits at most `publishTimeoutMs` + `replicaTimeoutMs` in all.
   * @default 1000
   */
  replicaTimeoutMs?: number;
  /**
   * Idempotent publish: write an entry only when no entry with the same branded id was written
   * to this stream within `idempotencyWindowMs` (module option); a repeat, also one racing the
   * first write, answers the first write's receipt (same `entryId`) and writes nothing. One
   * script call per publish, atomic on the server. With `replicas`, the script call and its
   * WAIT go as one pipeline, and a repeat's WAIT covers the first write (docs/publishing.md
   * "Idempotent and durable").
   * @default the `producer.idempotent` module option (false)
   * @see docs/publishing.md "Idempotent publish"
   */
  idempotent?: boolean;
  /**
   * The branded ids to write, one per payload (same length), e.g. to re-publish a batch under
   * its original ids; fresh ones are minted when absent. With `idempotent`, a repeated id inside
   * the batch is written once and its repeats answer the same receipt.
   */
  ids?: readonly string[];
  /**
   * A partitioned stream: the key of the entries (an account, an order); they go to partition
   * `crc32(key) mod count` (`<stream>:p:<i>`) with the key in their `pkey` field, so entries of
   * one key are handled one at a time and in order across the group. `publishMany` writes every
   * payload of the call with this key.
   * @default undefined (a plain stream)
   * @see docs/partitions.md
   */
  key?: string;
  /**
   * With `key`: the stream's partition count, stored at first use (SET NX); a call with another
   * count than the stored one fails. Absent: the stored count (read once per stream).
   * @default undefined
   */
  partitions?: number;
}

/** Options of `StreamProducer.publish()`. */
export interface PublishOptions extends Omit<PublishManyOptions, 'ids'> {
  /**
   * The branded id to write in the entry's `id` field, e.g. to re-publish a message under its
   * original id (consumers dedup on it). A fresh branded id is minted when absent.
   */
  id?: string;
}

/** What a publish returns for each written entry. */
export interface PublishReceipt {
  /** The branded id written in the entry's `id` field (the consumers' dedup key). */
  readonly id: string;
  /** The Redis stream entry id the server assigned, e.g. `1700000000000-0`. */
  readonly entryId: string;
}
