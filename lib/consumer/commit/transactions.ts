import { isBrandedId } from '../../codec/branded-id';
import { jsonCodec } from '../../codec/codecs';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { StreamTransaction } from '../../interfaces/stream-transaction.interface';
import type { CommitWrite } from '../../redis/stream-roles';
import type { EntryHandler } from '../context';
import { EntryTransaction, type TransactionScope, transactionScope } from './stream-transaction';

/** What an attempt that returned leaves to commit: its writes and the delivery they belong to. */
export interface AttemptWrites {
  readonly writes: readonly CommitWrite[];
  /** The entry's delivery count when it was read (the commit's fence). */
  readonly deliveries: number;
}

/** `m.tx` of a handler without `exactlyOnce`: one object for every message, each method refuses. */
export const NO_TRANSACTION: StreamTransaction = Object.freeze({
  get slotTag(): string {
    return refuse('slotTag');
  },
  publish: (): string => refuse('publish'),
  set: (): void => refuse('set'),
  incrBy: (): void => refuse('incrBy'),
  hset: (): void => refuse('hset'),
  del: (): void => refuse('del'),
});

function refuse(member: string): never {
  throw new TypeError(
    `StreamTransaction.${member}: this handler has no transaction; set exactlyOnce: true on its ` +
      `@StreamHandler to write through m.tx`,
  );
}

/**
 * The transactions of an `exactlyOnce` loop (docs/exactly-once.md): one {@link EntryTransaction}
 * per message (`m.tx`), started afresh before every attempt of its handler, and the writes of the
 * attempt that returned, for the commit that replaces the entry's XACK (`CommitQueue`).
 */
export class LoopTransactions {
  private readonly scope: TransactionScope;

  /**
   * @param stream the stream the loop reads (a partition's stream): keys written on a Cluster
   *   must share its hash slot.
   * @param group the loop's group (its outbox is the group's).
   * @param cluster true on a Redis Cluster.
   * @param outboxWritten told when a publish goes through the outbox (a Cluster only).
   */
  constructor(stream: string, group: string, cluster: boolean, outboxWritten?: () => void) {
    this.scope = transactionScope(stream, group, cluster, jsonCodec, outboxWritten);
  }

  /**
   * The outbox of publishes to streams in other Cluster slots, which a forwarder empties;
   * `undefined` without a Cluster (every publish is written directly).
   */
  get outbox(): string | undefined {
    return this.scope.outbox;
  }

  /**
   * The transaction of the message with branded id `id` and entry id `entryId`, read with
   * delivery count `deliveries`: its outputs' ids derive from the branded id, or from the entry
   * id when the entry has none (a foreign producer's).
   */
  of(id: string, entryId: string, deliveries: number): StreamTransaction {
    return new EntryTransaction(this.scope, isBrandedId(id) ? id : entryId, deliveries);
  }

  /** `handler`, each call starting its message's transaction from no writes (a retry too). */
  wrap(handler: EntryHandler): EntryHandler {
    if (handler.batch) return handler; // refused at bootstrap: exactlyOnce with batch
    const inner = handler.call;
    return {
      batch: false,
      call: (message) => {
        if (message.tx instanceof EntryTransaction) message.tx.begin();
        return inner(message);
      },
    };
  }

  /**
   * What `message`'s transaction collected in its last attempt, and the delivery it belongs to
   * (not `message.attempts`, which an in-place retry counts up); `undefined`: it has none.
   */
  writesOf(message: StreamMessage<unknown>): AttemptWrites | undefined {
    const { tx } = message;
    return tx instanceof EntryTransaction
      ? { writes: tx.writes, deliveries: tx.deliveries }
      : undefined;
  }
}
