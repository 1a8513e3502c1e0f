import { errorText } from '../../codec/codecs';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import { isReplyError } from '../../redis/redis-errors';
import type { AlongAck, EntryCheckpoints } from '../../redis/stream-roles';
import type { LoopContext } from '../context';

/**
 * Checkpoints of the entries a loop handles (docs/delivery.md "Checkpoints"): every message gets
 * `saveCheckpoint` (one HSET), and a redelivered one (`attempts > 1`: a retry, or a reclaim after
 * a crash, in any process) its last saved `checkpoint`, read with one HMGET per read. A first
 * delivery costs no command. The record of an entry goes away in the round trip of its XACK (the
 * ack buffer's and the dead-letter path's, through {@link alongAck}).
 */
export class Checkpoints {
  /** Entries with a record in Redis as far as this loop knows (saved here, or read). */
  private readonly recorded = new Set<string>();
  private refusedBefore = false;

  constructor(
    private readonly context: Pick<LoopContext, 'stream' | 'group' | 'where' | 'logger'>,
    private readonly store: EntryCheckpoints | undefined,
  ) {}

  /**
   * The messages of a read, redeliveries with their `checkpoint`. A read of first deliveries (the
   * hot path) is returned as it is: no command, no copy.
   */
  async attach(messages: StreamMessage<unknown>[]): Promise<StreamMessage<unknown>[]> {
    let again: StreamMessage<unknown>[] | undefined;
    for (const message of messages) if (message.attempts > 1) (again ??= []).push(message);
    if (again === undefined) return messages;
    const found = await this.readFor(again);
    if (found.size === 0) return messages;
    return messages.map((message) =>
      found.has(message.entryId) ? { ...message, checkpoint: found.get(message.entryId) } : message,
    );
  }

  /**
   * The write to send along the XACK of `entryIds`: the records of those that have one (none: no
   * write, no command). They are forgotten here.
   */
  alongAck(entryIds: readonly string[]): AlongAck | null {
    if (this.recorded.size === 0) return null;
    const drop = entryIds.filter((id) => this.recorded.delete(id));
    return drop.length > 0 ? { kind: 'dropCheckpoints', entryIds: drop } : null;
  }

  /**
   * The write to send along the XACK of entries that leave without a handler's ack (a dead
   * letter, an entry deleted from the stream): their records whether this loop knows of them or
   * not (a poison pill reclaimed from a crashed peer was never read for its checkpoint). Rare
   * paths, so the HDEL is sent even when there is nothing to drop.
   */
  alongExit(entryIds: readonly string[]): AlongAck | null {
    if (!this.store || entryIds.length === 0) return null;
    for (const id of entryIds) this.recorded.delete(id);
    return { kind: 'dropCheckpoints', entryIds: [...entryIds] };
  }

  /** What `saveCheckpoint(value)` of the message of `entryId` does: one HSET of its JSON. */
  async save(entryId: string, value: unknown): Promise<void> {
    const { stream, group, where } = this.context;
    const json = JSON.stringify(value);
    if (json === undefined) {
      throw new TypeError(
        `${where}: saveCheckpoint() of entry ${entryId} needs a JSON value, got ${typeof value}`,
      );
    }
    if (!this.store) return;
    this.recorded.add(entryId);
    await this.store.save(stream, group, entryId, json);
  }

  private async readFor(again: readonly StreamMessage<unknown>[]): Promise<Map<string, unknown>> {
    const found = new Map<string, unknown>();
    if (again.length === 0 || !this.store) return found;
    const { stream, group, where, logger } = this.context;
    const ids = again.map((m) => m.entryId);
    let values: ReadonlyArray<string | null | undefined>;
    try {
      values = await this.store.read(stream, group, ids);
    } catch (err) {
      // a refusal (an ACL without HMGET on the checkpoint keys) must not stop redeliveries
      if (!isReplyError(err)) throw err;
      if (!this.refusedBefore) {
        this.refusedBefore = true;
        logger.warn(
          `${where}: checkpoints cannot be read (${errorText(err)}); redeliveries run without ` +
            `them until the ACL allows HMGET on the checkpoint keys (docs/operations.md "Redis ACL")`,
        );
      }
      return found;
    }
    ids.forEach((entryId, i) => {
      const json = values[i];
      if (json === null || json === undefined) return;
      this.recorded.add(entryId);
      try {
        found.set(entryId, JSON.parse(json));
      } catch (err) {
        logger.warn(
          `${where}: checkpoint of entry ${entryId} is not JSON (${errorText(err)}); handled without it`,
        );
      }
    });
    return found;
  }
}
