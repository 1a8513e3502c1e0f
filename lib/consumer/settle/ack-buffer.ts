import type { HandlerErrors, LoopContext } from '../context';
import { NO_RECORDS, type AckRecordSource } from './ack-records';
import type { AckWriter } from './ack-writer';

/** Told how every XACK of the buffer ended (the order of keyed lanes waits on it). */
export interface AckWatch {
  /** The server acknowledged `ids` (its reply received). */
  acked(ids: readonly string[]): void;
  /** The XACK of `ids` failed: they are not acknowledged (the sender puts them back). */
  failed(ids: readonly string[], error: unknown): void;
}

/** What an ack carries besides the XACK and its along writes (those are the writer's). */
export interface AckWrites {
  /**
   * `dedup` / `newerWins` records, written in the same script call as the XACK; the look-up of
   * the next read rides with it.
   */
  records?: Pick<AckRecordSource, 'recordsOf' | 'forget' | 'riding'>;
  /** Keyed lanes: told when an XACK's reply is in, or that it failed; absent: nobody waits. */
  watch?: AckWatch;
}

/**
 * Entries handled and waiting for their XACK. The loop sends them with its next read (one round
 * trip for both), or before a step that reads the own PEL or may wait; acks that failed go back to
 * the front of the buffer and are sent again. In keyed lanes (partitions, `newerWins`) a key's
 * next entry waits for the XACK of the one before, so `KeyAckGate` flushes the buffer sooner when
 * a key waits (docs/partitions.md "Order").
 */
export class AckBuffer {
  private waiting: string[] = [];

  constructor(
    private readonly context: Pick<LoopContext, 'counters'>,
    private readonly writer: Pick<AckWriter, 'handled' | 'records'>,
    private readonly errors: Pick<HandlerErrors, 'forget'>,
    writes: AckWrites = {},
  ) {
    this.records = writes.records ?? NO_RECORDS;
    this.watch = writes.watch;
  }

  private readonly records: Pick<AckRecordSource, 'recordsOf' | 'forget' | 'riding'>;
  private readonly watch: AckWatch | undefined;

  /** Handled entries: acked with the next send. */
  add(entryIds: readonly string[]): void {
    for (const id of entryIds) this.waiting.push(id);
  }

  /** Takes every waiting ack (to send alongside a read). */
  take(): string[] {
    const acks = this.waiting;
    this.waiting = [];
    return acks;
  }

  /** Acks taken whose XACK failed: first in line again. */
  putBack(entryIds: string[]): void {
    this.waiting = entryIds.concat(this.waiting);
  }

  /** Sends every waiting ack now; on failure they wait again and the error is thrown. */
  async flush(): Promise<void> {
    const acks = this.take();
    if (acks.length === 0) return;
    try {
      await this.send(acks);
    } catch (err) {
      this.putBack(acks);
      throw err;
    }
  }

  /**
   * XACK of `entryIds`, with the skip records of those handled (`dedup`, `newerWins`) and the
   * look-up of the next read in the same script call when there are any: counted, and their
   * handler errors forgotten.
   */
  async send(entryIds: string[]): Promise<void> {
    const records = this.records.recordsOf(entryIds);
    const lookUp = this.writer.records ? this.records.riding?.(entryIds) : undefined;
    try {
      const found = await this.writer.handled(entryIds, records, lookUp?.queries);
      lookUp?.answered(found);
    } catch (err) {
      lookUp?.missed();
      this.watch?.failed(entryIds, err);
      throw err;
    }
    this.records.forget(entryIds);
    this.context.counters.acked(entryIds.length);
    this.errors.forget(entryIds);
    this.watch?.acked(entryIds);
  }
}
