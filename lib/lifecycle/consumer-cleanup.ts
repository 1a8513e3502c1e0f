import { errorText } from '../codec/codecs';
import { partitionStreamOf } from '../codec/partition-key';
import type { ConsumerLogger } from '../consumer';
import type { LifecycleClient } from '../redis/operator';
import { isNoGroupError } from '../redis/redis-errors';

/** Everything one group's cleanup needs (no Nest types). */
export interface ConsumerCleanupContext {
  client: Pick<
    LifecycleClient,
    'consumers' | 'deleteIdleConsumer' | 'touchConsumer' | 'partitionOwners'
  >;
  stream: string;
  group: string;
  /**
   * The handler's partition count (`null`: a plain stream). Taken from its options, never read
   * from Redis: the stored count is the same (another one fails at bootstrap), and a plain
   * handler's touch must cost one command (100 idle handlers, docs/scale.md) and no `GET` its
   * ACL may not grant.
   */
  partitions: number | null;
  /** This process's consumer name: never deleted. */
  self: string;
  /** Idle longer than this (ms) and holding nothing: deleted (`null`: cleanup off, `touch()` only). */
  idleMs: number | null;
  logger: ConsumerLogger;
}

/**
 * Deletes the consumers of one group that are idle longer than `idleMs` and hold no pending entry
 * (docs/operations.md "Consumer cleanup"): the names of processes long gone (pods of past deploys).
 * A consumer that still holds entries stays until the loop's reclaim has moved them to a live
 * consumer; this process's own consumer is never touched. The check and the delete are one script,
 * so a consumer that wakes up and reads in between is not deleted with its entries. Plain
 * TypeScript.
 */
export class ConsumerCleanup {
  constructor(private readonly ctx: ConsumerCleanupContext) {}

  /**
   * Tells the group this process's consumer is alive (resets its idle time), so the cleanup of
   * peers never takes it for a dead one while it waits for work; on a partitioned stream, in each
   * partition it holds the lease of. Never throws.
   */
  async touch(): Promise<void> {
    const { client, stream, group, self } = this.ctx;
    try {
      const partitions = await this.partitions();
      const mine = partitions
        ? partitions.filter((p) => p.owner === self).map((p) => p.stream)
        : [stream];
      await Promise.all(mine.map((each) => client.touchConsumer(each, group, self)));
    } catch {
      // the group does not exist yet, or Redis is away: the loop logs that
    }
  }

  /** One pass; returns the names deleted. Never throws (failures are logged). */
  async run(): Promise<string[]> {
    const { stream, group, idleMs, logger } = this.ctx;
    const deleted: string[] = [];
    if (idleMs === null) return deleted;
    let partitions: Array<{ stream: string; owner: string | null }> | null;
    try {
      partitions = await this.partitions();
    } catch (err) {
      logger.warn(
        `Consumer cleanup of ${stream}/${group} failed: ${errorText(err)}; retried later`,
      );
      return deleted;
    }
    for (const { stream: each, owner } of partitions ?? [{ stream, owner: null }])
      deleted.push(...(await this.runOn(each, owner, idleMs)));
    return deleted;
  }

  /** The partitions of a partitioned stream with their lease holders; `null` for a plain one. */
  private async partitions(): Promise<Array<{ stream: string; owner: string | null }> | null> {
    const { client, stream, group, partitions: count } = this.ctx;
    if (count === null) return null;
    const owners = await client.partitionOwners(stream, group, count);
    return owners.map((owner, i) => ({ stream: partitionStreamOf(stream, i), owner }));
  }

  /** One pass over the group on `stream`; `owner`, a partition's lease holder, is live. */
  private async runOn(stream: string, owner: string | null, idleMs: number): Promise<string[]> {
    const { client, group, self, logger } = this.ctx;
    const deleted: string[] = [];
    try {
      const consumers = await client.consumers(stream, group);
      for (const consumer of consumers) {
        if (consumer.name === self || consumer.name === owner || consumer.idleMs < idleMs) continue;
        if (consumer.pending > 0) {
          logger.debug?.(
            `Consumer cleanup of ${stream}/${group}: '${consumer.name}' is idle but holds ` +
              `${consumer.pending} pending entries; kept until they are reclaimed`,
          );
          continue;
        }
        const outcome = await client.deleteIdleConsumer(stream, group, consumer.name, idleMs);
        if (outcome !== 'deleted') continue;
        deleted.push(consumer.name);
        logger.log(
          `Consumer cleanup of ${stream}/${group}: deleted consumer '${consumer.name}' ` +
            `(idle ${Math.round(consumer.idleMs / 1000)} s, no pending entries)`,
        );
      }
    } catch (err) {
      // the group is created by the loop; before that there is nothing to clean
      if (!isNoGroupError(err) && !/no such key/i.test(errorText(err))) {
        logger.warn(
          `Consumer cleanup of ${stream}/${group} failed: ${errorText(err)}; retried later`,
        );
      }
    }
    return deleted;
  }
}
