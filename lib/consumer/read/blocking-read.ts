import {
  stallMarginMs,
  type RawEntry,
  type StreamsClient,
  type Unlisten,
} from '../../redis/stream-roles';

/**
 * How a consumer loop waits for new entries (`XREADGROUP ... >` with BLOCK): on a connection of its
 * own, or in a read shared with the other loops of its group (docs/scale.md "Many handlers").
 * Everything else the loop sends goes through its `StreamsClient`.
 */
export interface BlockingReader {
  /**
   * Resolves with up to `count` new entries of the loop's stream, or `[]` once `waitMs` passed
   * with nothing new (or `interrupt` was called). No single server-side park lasts longer than
   * `parkMs` (the handler's `blockMs`); a shorter one keeps the reply margin of `parkMs`, so how
   * long a stall the loop rides out does not depend on when its park began.
   */
  read(count: number, waitMs: number, parkMs: number): Promise<RawEntry[]>;
  /**
   * Ends a pending `read` early; it resolves with what its read got, if anything (those entries
   * are delivered to the loop's consumer, so they must reach the loop). `mayDrop` allows dropping
   * the connection when CLIENT UNBLOCK is denied (a stop), never for a mere wake-up.
   */
  interrupt(mayDrop: boolean): Promise<void>;
  /**
   * Calls `listener` when the read's connection is back (to cut a backoff short), if it has its
   * own; returns what stops it.
   */
  onReconnect?(listener: () => void): Unlisten;
  /**
   * Calls `listener` when the read's Cluster changed its slot map, if it has its own connection;
   * returns what stops it.
   */
  onTopologyChange?(listener: () => void): Unlisten;
}

/**
 * The loop parks its own XREADGROUP on its own connection (`sharedReads: false`; docs/delivery.md
 * "The loop").
 */
export class OwnConnectionRead implements BlockingReader {
  /** @param claimIdleMs its reads claim entries idle this long along (`readClaimIdleMs`). */
  constructor(
    private readonly client: StreamsClient,
    private readonly stream: string,
    private readonly group: string,
    private readonly consumer: string,
    private readonly claimIdleMs?: number,
  ) {}

  read(count: number, waitMs: number, parkMs: number): Promise<RawEntry[]> {
    const block = Math.max(1, Math.min(waitMs, parkMs));
    const { stream, group, consumer, claimIdleMs } = this;
    const margin = stallMarginMs(parkMs);
    return this.client.readGroup(stream, group, consumer, count, '>', block, margin, claimIdleMs);
  }

  interrupt(mayDrop: boolean): Promise<void> {
    return this.client.interruptRead(mayDrop);
  }
}
