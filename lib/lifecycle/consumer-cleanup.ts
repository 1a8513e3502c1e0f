import { errorText } from '../codec/codecs';
import type { ConsumerLogger } from '../consumer/consumer.types';
import type { LifecycleClient } from '../redis/lifecycle-client';
import { isNoGroupError } from '../redis/streams-client';

/** Everything one group's cleanup needs (no Nest types). */
export interface ConsumerCleanupContext {
  client: Pick<LifecycleClient, 'consumers' | 'deleteIdleConsumer' | 'touchConsumer'>;
  stream: string;
  group: string;
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
   * peers never takes it for a dead one while it waits for work. Never throws.
   */
  async touch(): Promise<void> {
    const { client, stream, group, self } = this.ctx;
    try {
      await client.touchConsumer(stream, group, self);
    } catch {
      // the group does not exist yet, or Redis is away: the loop logs that
    }
  }

  /** One pass; returns the names deleted. Never throws (failures are logged). */
  async run(): Promise<string[]> {
    const { client, stream, group, self, idleMs, logger } = this.ctx;
    const deleted: string[] = [];
    if (idleMs === null) return deleted;
    try {
      const consumers = await client.consumers(stream, group);
      for (const consumer of consumers) {
        if (consumer.name === self || consumer.idleMs < idleMs) continue;
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
