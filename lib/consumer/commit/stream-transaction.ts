import { derivedBrandedId } from '../../codec/branded-id';
import { encodeEntry } from '../../codec/codecs';
import { describeValue as describe } from '../../config/describe-value';
import type { StreamCodec } from '../../interfaces/codec.interface';
import type {
  StreamTransaction,
  TransactionPublishOptions,
} from '../../interfaces/stream-transaction.interface';
import { keySlot } from '../../redis/connection';
import { COMMIT_COUNTER_LIMIT } from '../../redis/loop';
import { slotTagOf } from '../../redis/package-keys';
import type { CommitWrite } from '../../redis/stream-roles';

/** What an {@link EntryTransaction} is built from: one per message of an exactly-once handler. */
export interface EntryTransactionSource {
  /** The stream the entry was read from (for a partitioned handler, the partition stream). */
  readonly sourceStream: string;
  /** The entry's branded id (the message's `id`): its outputs' ids derive from it. */
  readonly sourceId: string;
  /** The codec of a publish that gives none: the module's producer codec. */
  readonly codec: StreamCodec<unknown>;
  /** True on a Redis Cluster: every key written must then be in the source stream's slot. */
  readonly cluster: boolean;
  /**
   * The entry's delivery count in the group's pending list when it was read: the commit's fence
   * compares it (a partition's in-place retry runs again under the same delivery).
   * @default 1
   */
  readonly deliveries?: number;
}

const PUBLISH_OPTION_NAMES: readonly string[] = ['id', 'codec'];
const SET_OPTION_NAMES: readonly string[] = ['pxMs'];

/**
 * `m.tx` of an exactly-once handler: collects the entry's writes, checked as they are made, for the
 * loop to commit with the entry's XACK (`EntryCommits`). Not yet called by the loop.
 */
export class EntryTransaction implements StreamTransaction {
  readonly slotTag: string;
  /** The delivery the writes belong to (see {@link EntryTransactionSource.deliveries}). */
  readonly deliveries: number;
  /** The source stream's slot on a Cluster; `undefined` without one (no slot check). */
  private readonly slot: number | undefined;
  private recorded: CommitWrite[] = [];
  /** The place of the next publish among this attempt's publishes (its derived id). */
  private position = 0;

  constructor(private readonly source: EntryTransactionSource) {
    this.slotTag = slotTagOf(source.sourceStream);
    this.deliveries = source.deliveries ?? 1;
    this.slot = source.cluster ? keySlot(source.sourceStream) : undefined;
  }

  /** The writes recorded since {@link begin}, in call order. */
  get writes(): readonly CommitWrite[] {
    return this.recorded;
  }

  /** Starts an attempt from no writes (before every attempt: a retry must not repeat the last). */
  begin(): void {
    this.recorded = [];
    this.position = 0;
  }

  publish<T>(stream: string, payload: T, options?: TransactionPublishOptions<T>): string {
    this.checkKey('publish', 'stream', stream);
    checkOptions('publish', options, PUBLISH_OPTION_NAMES);
    const given = options?.id;
    if (given !== undefined && (typeof given !== 'string' || given.length === 0)) {
      throw new TypeError(
        `StreamTransaction.publish(): option 'id' must be a non-empty string, got ${describe(given)}`,
      );
    }
    const codec = options?.codec ?? this.source.codec;
    if (typeof codec !== 'object' || codec === null || typeof codec.encode !== 'function') {
      throw new TypeError(
        `StreamTransaction.publish(): option 'codec' must be a codec (an object with encode and decode), got ${describe(codec)}`,
      );
    }
    const id = given ?? derivedBrandedId(this.source.sourceId, this.position);
    const fields = encodeEntry(codec as StreamCodec<unknown>, id, payload);
    this.position++;
    this.recorded.push({ op: 'xadd', key: stream, fields });
    return id;
  }

  set(key: string, value: string, options?: { pxMs?: number }): void {
    this.checkKey('set', 'key', key);
    checkString('set', 'value', value);
    checkOptions('set', options, SET_OPTION_NAMES);
    const pxMs = options?.pxMs;
    if (pxMs === undefined) {
      this.recorded.push({ op: 'set', key, value });
      return;
    }
    if (typeof pxMs !== 'number' || !Number.isSafeInteger(pxMs) || pxMs <= 0) {
      throw new TypeError(
        `StreamTransaction.set(): option 'pxMs' must be a positive integer, got ${describe(pxMs)}`,
      );
    }
    this.recorded.push({ op: 'set', key, value, pxMs });
  }

  incrBy(key: string, by: number): void {
    this.checkKey('incrBy', 'key', key);
    if (
      typeof by !== 'number' ||
      !Number.isSafeInteger(by) ||
      Math.abs(by) > COMMIT_COUNTER_LIMIT
    ) {
      throw new TypeError(
        `StreamTransaction.incrBy(): by must be an integer from -${COMMIT_COUNTER_LIMIT} to ${COMMIT_COUNTER_LIMIT}, got ${describe(by)}`,
      );
    }
    this.recorded.push({ op: 'incrBy', key, by });
  }

  hset(key: string, field: string, value: string): void {
    this.checkKey('hset', 'key', key);
    checkString('hset', 'field', field);
    checkString('hset', 'value', value);
    this.recorded.push({ op: 'hset', key, field, value });
  }

  del(key: string): void {
    this.checkKey('del', 'key', key);
    this.recorded.push({ op: 'del', key });
  }

  /**
   * A key (or a publish's stream) must be a non-empty string and, on a Cluster, in the source
   * stream's slot: the commit is one script call, whose keys must never cross slots.
   * NOTE: a later change adds an outbox for publishes to streams of other slots (written in the
   * source's slot with the commit, then forwarded); until then they are refused here too.
   */
  private checkKey(method: string, name: 'key' | 'stream', key: string): void {
    if (typeof key !== 'string' || key.length === 0) {
      throw new TypeError(
        `StreamTransaction.${method}(): ${name} must be a non-empty string, got ${describe(key)}`,
      );
    }
    if (this.slot === undefined || keySlot(key) === this.slot) return;
    throw new TypeError(
      `StreamTransaction.${method}(): ${name} '${key}' is not in the hash slot of stream ` +
        `'${this.source.sourceStream}'; put the tag ${this.slotTag} in it ('${this.slotTag}:${key}')`,
    );
  }
}

function checkString(method: string, name: string, value: unknown): void {
  if (typeof value !== 'string') {
    throw new TypeError(
      `StreamTransaction.${method}(): ${name} must be a string, got ${describe(value)}`,
    );
  }
}

/** `options` absent, or an object of known option names only. */
function checkOptions(method: string, options: unknown, known: readonly string[]): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(
      `StreamTransaction.${method}(): options must be an object, got ${describe(options)}`,
    );
  }
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw new TypeError(
        `StreamTransaction.${method}(): unknown option '${name}' (known: ${known.join(', ')})`,
      );
    }
  }
}
