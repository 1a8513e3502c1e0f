import { isCluster, type CommandLink, mapReply, parseEntry } from '../connection';
import { isNoSuchKeyError } from '../redis-errors';
import type { ConsumerInfo, GroupInfo, RawEntry, StreamQueries } from '../stream-roles';

/**
 * {@link StreamQueries} on one link. XINFO, which ioredis's command table lists without a key,
 * reaches a random master of a Cluster first and is redirected; CONFIG GET asks every master.
 */
export class RedisStreamQueries implements StreamQueries {
  constructor(private readonly link: CommandLink) {}

  async range(stream: string, start: string, end: string, count: number): Promise<RawEntry[]> {
    const reply = (await this.link.send([
      'XRANGE',
      stream,
      start,
      end,
      'COUNT',
      count,
    ])) as unknown[];
    return reply.map(parseEntry);
  }

  async length(stream: string): Promise<number> {
    return Number(await this.link.send(['XLEN', stream]));
  }

  async groups(stream: string): Promise<GroupInfo[]> {
    let reply: unknown[];
    try {
      reply = (await this.link.send(['XINFO', 'GROUPS', stream])) as unknown[];
    } catch (err) {
      if (isNoSuchKeyError(err)) return [];
      throw err;
    }
    return reply.map((item) => {
      const map = mapReply(item);
      const lag = map.get('lag');
      return {
        name: String(map.get('name')),
        pending: Number(map.get('pending') ?? 0),
        // Redis 7 reports lag (nil when it cannot tell); 6.2 has no such field.
        lag: lag === undefined || lag === null ? null : Number(lag),
        lastDeliveredId: String(map.get('last-delivered-id') ?? '0-0'),
      };
    });
  }

  async consumers(stream: string, group: string): Promise<ConsumerInfo[]> {
    const reply = (await this.link.send(['XINFO', 'CONSUMERS', stream, group])) as unknown[];
    return reply.map((item) => {
      const map = mapReply(item);
      return {
        name: String(map.get('name')),
        pending: Number(map.get('pending') ?? 0),
        idleMs: Number(map.get('idle') ?? 0),
      };
    });
  }

  /** On a Cluster every master is asked; values that differ are listed, comma-separated. */
  async config(parameter: string): Promise<string | null> {
    try {
      const replies = [await this.link.send(['CONFIG', 'GET', parameter])];
      const redis = this.link.connection;
      if (isCluster(redis)) {
        // the first call waited for the slot map; it went to a random node: ask every master
        const masters = redis.nodes('master');
        replies.push(
          ...(await Promise.all(
            masters.map((node) => this.link.sendBeside(node, ['CONFIG', 'GET', parameter])),
          )),
        );
      }
      // one parameter asked: the one value of the (flat or object) map, if any
      const values = new Set(
        replies.flatMap((reply) => [...mapReply(reply).values()].slice(0, 1).map(String)),
      );
      return values.size === 0 ? null : [...values].join(',');
    } catch {
      return null;
    }
  }
}
