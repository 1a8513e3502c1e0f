import type { CodecOption } from './codec.interface';

/** Options of `StreamProducer.publishMany()`. */
export interface PublishManyOptions {
  /**
   * Trims the stream to about this many entries on each write (`XADD ... MAXLEN ~ n`); no
   * trimming when absent.
   */
  maxLen?: number;
  /**
   * How the payload becomes stream fields (SPEC §5).
   * @default 'json'
   */
  codec?: CodecOption;
}

/** Options of `StreamProducer.publish()`. */
export interface PublishOptions extends PublishManyOptions {
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
