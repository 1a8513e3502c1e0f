/**
 * The transaction outbox role (docs/exactly-once.md "Cluster"), beside the roles of
 * `stream-roles.ts` (which re-exports it). A leaf: types only; transaction-outbox.ts holds the
 * outbox's layout and its commands.
 */

/** An entry of a transaction outbox, ready to forward. */
export interface OutboxItem {
  /** Its id in the outbox stream (XDEL'd once forwarded). */
  readonly outboxId: string;
  /** The stream it is published to. */
  readonly target: string;
  /** Its branded id: the idempotent publish's key, so a repeat forward writes nothing. */
  readonly id: string;
  /** The entry's fields, as a direct publish writes them (`id` first). */
  readonly fields: readonly string[];
}

/** An outbox entry that does not have the outbox's layout (written by hand, or hostile). */
export interface MalformedOutboxItem {
  readonly outboxId: string;
  readonly malformed: string;
}

/**
 * Transaction outboxes (docs/exactly-once.md "Cluster"): an `exactlyOnce` handler's publish to a
 * stream in another Cluster slot is written, with the commit, to a stream in the source's slot
 * (`outboxKeyOf`), and forwarded from there with an idempotent publish.
 */
export interface TransactionOutboxes {
  /** Up to `count` entries of `outbox` after `after` (`'-'`: from the start), oldest first. */
  read(
    outbox: string,
    after: string,
    count: number,
  ): Promise<Array<OutboxItem | MalformedOutboxItem>>;
  /**
   * Publishes `items` (all of one target) idempotently, within `windowMs`: an item already
   * forwarded (by this process before a crash, or a peer) writes nothing.
   */
  forward(target: string, items: readonly OutboxItem[], windowMs: number): Promise<void>;
  /** XDEL of forwarded entries. */
  remove(outbox: string, outboxIds: readonly string[]): Promise<void>;
}
