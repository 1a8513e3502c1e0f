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
import { outboxKeyOf, slotTagOf } from '../../redis/package-keys';
import { outboxFieldsOf } from '../../redis/publish';
import type { CommitWrite } from '../../redis/stream-roles';

/**
 * What every transaction of one loop shares, worked out once for the loop (not per message):
 * {@link transactionScope}.
 */
export interface TransactionScope {
  /** The stream the entries are read from (for a partitioned handler, the partition stream). */
  readonly sourceStream: string;
  /** The hash tag of the source stream's slot (`m.tx.slotTag`). */
  readonly slotTag: string;
  /** The source stream's slot on a Cluster; `undefined` without one (no slot check). */
  readonly slot: number | undefined;
  /**
   * On a Cluster, the outbox in the source's slot that a publish to a stream of another slot is
   * written to (forwarded after the commit); `undefined` without a Cluster.
   */
  readonly outbox: string | undefined;
  /** The codec of a publish that gives none. */
  readonly codec: StreamCodec<unknown>;
  /** Told when a publish goes through the outbox (its forwarder looks soon). */
  readonly outboxWritten?: () => void;
}

/**
 * The scope of the transactions of `group`'s loop on `sourceStream`.
 * @param cluster true on a Redis Cluster: keys must share the source's slot, publishes elsewhere
 *   go through the outbox.
 */
export function transactionScope(
  sourceStream: string,
  group: string,
  cluster: boolean,
  codec: StreamCodec<unknown>,
  outboxWritten?: () => void,
): TransactionScope {
  return {
    sourceStream,
    slotTag: slotTagOf(sourceStream),
    slot: cluster ? keySlot(sourceStream) : undefined,
    outbox: cluster ? outboxKeyOf(sourceStream, group) : undefined,
    codec,
    outboxWritten,
  };
}

const PUBLISH_OPTION_NAMES: readonly string[] = ['id', 'codec'];
const SET_OPTION_NAMES: readonly string[] = ['pxMs'];

/**
 * `m.tx` of an exactly-once handler: collects the entry's writes, checked as they are made, for the
 * loop to commit with the entry's XACK (`EntryCommits`).
 */
export class EntryTransaction implements StreamTransaction {
  private recorded: CommitWrite[] = [];
  /** The place of the next publish among this attempt's publishes (its derived id). */
  private position = 0;

  /**
   * @param scope what the loop's transactions share.
   * @param sourceId the entry's branded id (the message's `id`): its outputs' ids derive from it.
   * @param deliveries the entry's delivery count in the group's pending list when it was read:
   *   the commit's fence compares it (a partition's in-place retry runs again under the same
   *   delivery).
   */
  constructor(
    private readonly scope: TransactionScope,
    private readonly sourceId: string,
    readonly deliveries = 1,
  ) {}

  get slotTag(): string {
    return this.scope.slotTag;
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
    checkName('publish', 'stream', stream);
    checkOptions('publish', options, PUBLISH_OPTION_NAMES);
    const given = options?.id;
    if (given !== undefined && (typeof given !== 'string' || given.length === 0)) {
      throw new TypeError(
        `StreamTransaction.publish(): option 'id' must be a non-empty string, got ${describe(given)}`,
      );
    }
    const codec = options?.codec ?? this.scope.codec;
    if (typeof codec !== 'object' || codec === null || typeof codec.encode !== 'function') {
      throw new TypeError(
        `StreamTransaction.publish(): option 'codec' must be a codec (an object with encode and decode), got ${describe(codec)}`,
      );
    }
    const { outbox, outboxWritten } = this.scope;
    // a stream of another slot: through the outbox, when there is one (else refused below)
    const forwarded = outbox !== undefined && !this.inSlot(stream);
    if (!forwarded) this.checkKey('publish', 'stream', stream);
    const id = given ?? derivedBrandedId(this.sourceId, this.position);
    const fields = encodeEntry(codec as StreamCodec<unknown>, id, payload);
    this.position++;
    if (forwarded) {
      this.recorded.push({ op: 'xadd', key: outbox, fields: outboxFieldsOf(stream, id, fields) });
      outboxWritten?.();
    } else this.recorded.push({ op: 'xadd', key: stream, fields });
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
   * A key (or a publish's stream without an outbox) must be a non-empty string and, on a Cluster,
   * in the source stream's slot: the commit is one script call, whose keys must never cross slots.
   */
  private checkKey(method: string, name: 'key' | 'stream', key: string): void {
    checkName(method, name, key);
    if (this.inSlot(key)) return;
    const { sourceStream, slotTag } = this.scope;
    throw new TypeError(
      `StreamTransaction.${method}(): ${name} '${key}' is not in the hash slot of stream ` +
        `'${sourceStream}'; put the tag ${slotTag} in it ('${slotTag}:${key}')`,
    );
  }

  /** True without a Cluster, or when `key` is in the source stream's slot. */
  private inSlot(key: string): boolean {
    return this.scope.slot === undefined || keySlot(key) === this.scope.slot;
  }
}

function checkName(method: string, name: 'key' | 'stream', key: unknown): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError(
      `StreamTransaction.${method}(): ${name} must be a non-empty string, got ${describe(key)}`,
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
