import type { AlongAck, StreamsClient } from '../redis/stream-roles';
import type { HandlerErrors, LoopContext } from './loop.types';
import { NO_RECORDS, type AckRecordSource } from './ack-records';

/** Something with writes to send along the XACK of some entries (checkpoints dropped, ...). */
export interface AlongAckSource {
  alongAck(ids: readonly string[]): AlongAck | null;
}

/** What an ack carries besides the XACK. */
export interface AckWrites {
  /** `dedup` / `newerWins` records, written in the same script call as the XACK. */
  records?: Pick<AckRecordSource, 'recordsOf' | 'forget'>;
  /** Writes sent right behind the XACK, in its round trip. */
  along?: readonly AlongAckSource[];
}

/**
 * Entries handled and waiting for their XACK. The loop sends them with its next read (one round
 * trip for both), or before a step that reads the own PEL or may wait; acks that failed go back to
 * the front of the buffer and are sent again.
 */
export class AckBuffer {
  private waiting: string[] = [];

  constructor(
    private readonly context: Pick<LoopContext, 'stream' | 'group' | 'counters'>,
    private readonly client: Pick<StreamsClient, 'ack' | 'ackRecording'>,
    private readonly errors: Pick<HandlerErrors, 'forget'>,
    writes: AckWrites = {},
  ) {
    this.records = writes.records ?? NO_RECORDS;
    this.along = writes.along ?? [];
  }

  private readonly records: Pick<AckRecordSource, 'recordsOf' | 'forget'>;
  private readonly along: ReadonlyArray<AlongAckSource>;

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
   * XACK of `entryIds`, with the skip records of those handled (`dedup`, `newerWins`) in the same
   * script call when there are any: counted, and their handler errors forgotten.
   */
  async send(entryIds: string[]): Promise<void> {
    const { stream, group } = this.context;
    const along = this.along.flatMap((each) => each.alongAck(entryIds) ?? []);
    const records = this.records.recordsOf(entryIds);
    if (records.length > 0 && this.client.ackRecording) {
      await this.client.ackRecording(stream, group, entryIds, records, along);
    } else {
      await this.client.ack(stream, group, entryIds, along);
    }
    this.records.forget(entryIds);
    this.context.counters.acked(entryIds.length);
    this.errors.forget(entryIds);
  }
}
