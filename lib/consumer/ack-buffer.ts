import type { AlongAck, StreamsClient } from '../redis/stream-roles';
import type { HandlerErrors, LoopContext } from './loop.types';

/**
 * Entries handled and waiting for their XACK. The loop sends them with its next read (one round
 * trip for both), or before a step that reads the own PEL or may wait; acks that failed go back to
 * the front of the buffer and are sent again.
 */
export class AckBuffer {
  private waiting: string[] = [];

  constructor(
    private readonly context: Pick<LoopContext, 'stream' | 'group' | 'counters'>,
    private readonly client: Pick<StreamsClient, 'ack'>,
    private readonly errors: Pick<HandlerErrors, 'forget'>,
    /** Writes about acked entries sent in the round trip of their XACK (checkpoints dropped, ...). */
    private readonly along: ReadonlyArray<{
      alongAck(ids: readonly string[]): AlongAck | null;
    }> = [],
  ) {}

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

  /** XACK of `entryIds`: counted, and their handler errors forgotten. */
  async send(entryIds: string[]): Promise<void> {
    const along = this.along.flatMap((each) => each.alongAck(entryIds) ?? []);
    await this.client.ack(this.context.stream, this.context.group, entryIds, along);
    this.context.counters.acked(entryIds.length);
    this.errors.forget(entryIds);
  }
}
