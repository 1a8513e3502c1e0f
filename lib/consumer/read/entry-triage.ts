import { decodeEntry, errorText } from '../../codec/codecs';
import { partitionKeyOf } from '../../codec/partition-key';
import type { StreamCodec } from '../../interfaces/codec.interface';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { StreamTransaction } from '../../interfaces/stream-transaction.interface';
import type { RawEntry } from '../../redis/stream-roles';
import type { DeadLetterCandidate, OwnedPartition } from '../context';

/** What a read is sorted by: who reads, how entries decode, and which wait for a retry. */
export interface TriageRules {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  readonly codec: StreamCodec<unknown>;
  readonly maxDeliveries: number;
  /** Handed to every message (aborted at stop). */
  readonly signal: AbortSignal;
  /** True for an entry that waits for its retry here. */
  isWaitingRetry(entryId: string): boolean;
  /** What a message's `saveCheckpoint(value)` calls (`Checkpoints.save`). */
  saveCheckpoint(entryId: string, value: unknown): Promise<void>;
  /** A message's `tx`: its own with `exactlyOnce`, else one that refuses (`LoopTransactions`). */
  transactionOf(id: string, entryId: string, deliveries: number): StreamTransaction;
  /** A partition of a partitioned stream: its index and this loop's lease generation. */
  readonly partition?: OwnedPartition;
}

/** One read, sorted. Dead-letter candidates carry no handler error yet (`error` undefined). */
export interface TriagedRead {
  /** Retries waiting for their time that the read took again (a drain, our own reclaim). */
  waitingRetries: string[];
  /** Pending entries deleted from the stream. */
  deleted: string[];
  /** Delivered more than `maxDeliveries` times; `attempts`: the deliveries before this read. */
  poison: DeadLetterCandidate[];
  /** Entries the codec cannot read; `error` says why. */
  undecodable: DeadLetterCandidate[];
  /**
   * The messages for the handler, in read order, built once here (the redeliveries get their
   * `checkpoint` from `Checkpoints.attach`).
   */
  fresh: StreamMessage<unknown>[];
  /** The raw fields of each fresh message (same order), for trace context. */
  freshFields: Array<readonly string[]>;
}

/**
 * Sorts a read into waiting retries, deleted entries, poison pills, undecodable entries and fresh
 * messages. Pure: a function of the read, its delivery counts (`null`: a fresh read, all 1 but
 * those the read counted itself, `RawEntry.deliveries`) and the rules.
 */
export function triage(
  entries: readonly RawEntry[],
  counts: ReadonlyMap<string, number> | null,
  rules: TriageRules,
): TriagedRead {
  const { codec, maxDeliveries, stream, group, consumer, signal, saveCheckpoint, partition } =
    rules;
  const { transactionOf } = rules;
  const read: TriagedRead = {
    waitingRetries: [],
    deleted: [],
    poison: [],
    undecodable: [],
    fresh: [],
    freshFields: [],
  };
  for (const { entryId, fields, deliveries } of entries) {
    // a retry waiting for its time is ours and pending: a read of the own PEL (or our own
    // reclaim, when the heartbeat fell behind) must not start it
    if (rules.isWaitingRetry(entryId)) {
      read.waitingRetries.push(entryId);
      continue;
    }
    if (fields === null) {
      read.deleted.push(entryId);
      continue;
    }
    // a read that claimed idle entries along (CLAIM) says each entry's count itself
    const attempts = deliveries ?? (counts === null ? 1 : (counts.get(entryId) ?? 1));
    if (attempts > maxDeliveries) {
      // this read (a drain, a reclaim) reached no handler: the letter says what the poison
      // sweep would, the deliveries before it
      read.poison.push({ entryId, fields, attempts: attempts - 1, error: undefined });
      continue;
    }
    let decoded;
    try {
      decoded = decodeEntry(codec, fields, partition !== undefined);
    } catch (err) {
      read.undecodable.push({ entryId, fields, attempts, error: errorText(err) });
      continue;
    }
    // one object literal of one shape per message (a partition's: one more shape, never a copy
    // spread from the plain one, which costs ten times the literal): the hot path's only
    // per-entry allocation besides the payload and the closure that binds saveCheckpoint
    const id = decoded.id ?? entryId;
    const save = (value: unknown): Promise<void> => saveCheckpoint(entryId, value);
    const tx = transactionOf(id, entryId, attempts);
    read.fresh.push(
      partition === undefined
        ? {
            id,
            entryId,
            stream,
            group,
            consumer,
            payload: decoded.payload,
            attempts,
            signal,
            saveCheckpoint: save,
            tx,
          }
        : {
            id,
            entryId,
            stream,
            group,
            consumer,
            payload: decoded.payload,
            attempts,
            signal,
            saveCheckpoint: save,
            tx,
            partition: partition.index,
            key: partitionKeyOf(fields),
            leaseGeneration: partition.generation,
          },
    );
    read.freshFields.push(fields);
  }
  return read;
}
