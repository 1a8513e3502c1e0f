import type { CommandLink } from './command-link';
import { RATE_BUDGET_SCRIPT, RATE_BUDGET_SHA, rateBudgetKey } from './rate-budget.script';
import {
  ACK_RECORDS_SCRIPT,
  ACK_RECORDS_SHA,
  ackedIdKey,
  newestIdKey,
} from './skip-records.script';
import { isBusyGroupError, isNoScriptError, isOomError } from './redis-errors';
import { parseEntry } from './reply-shapes';
import { checkpointKeyOf } from './entry-checkpoints';
import type {
  AlongAck,
  AutoClaimPage,
  LoopCommands,
  PendingQuery,
  PendingRow,
  RateBudgetGrant,
  RawEntry,
  SkipQuery,
  SkipRecord,
  StreamQueries,
} from './stream-roles';

/**
 * {@link LoopCommands} on one link: the group's setup, acks, claims and PEL queries of a loop.
 * Every command names its stream first, so on a Cluster it reaches the master of its slot.
 */
export class RedisLoopCommands implements LoopCommands {
  /**
   * @param link where the commands go.
   * @param queries XINFO GROUPS, to tell whether a group exists when XGROUP CREATE cannot say.
   */
  constructor(
    private readonly link: CommandLink,
    private readonly queries: Pick<StreamQueries, 'groups'>,
  ) {}

  async createGroup(stream: string, group: string, startId: string): Promise<boolean> {
    try {
      await this.link.send(['XGROUP', 'CREATE', stream, group, startId, 'MKSTREAM']);
      return true;
    } catch (err) {
      if (isBusyGroupError(err)) return false;
      // NOTE: at maxmemory (noeviction) Redis answers OOM before it looks for the group, so an
      // existing group gets OOM, not BUSYGROUP; reads and acks still work: go on with that group.
      if (isOomError(err) && (await this.groupExists(stream, group))) return false;
      throw err;
    }
  }

  /** True when XINFO GROUPS lists `group`; false when it does not or cannot tell. */
  private async groupExists(stream: string, group: string): Promise<boolean> {
    try {
      return (await this.queries.groups(stream)).some((info) => info.name === group);
    } catch {
      return false;
    }
  }

  async ack(
    stream: string,
    group: string,
    ids: readonly string[],
    along: readonly AlongAck[] = [],
  ): Promise<number> {
    if (ids.length === 0) return 0;
    return this.withAlong(stream, group, this.link.send(['XACK', stream, group, ...ids]), along);
  }

  /** `acked` (an XACK, or the script of one), with `along` sent right behind it. */
  private async withAlong(
    stream: string,
    group: string,
    acked: Promise<unknown>,
    along: readonly AlongAck[],
  ): Promise<number> {
    if (along.length === 0) return Number(await acked);
    // sent right behind the XACK on the same connection: one round trip for all of them. Best
    // effort: a refused or failed write (an ACL without HDEL on the checkpoint keys) leaves a
    // record no delivery reads again (its entry is acked), and must not fail the ack itself
    const writes = along.map((write) =>
      this.link.send(alongAckCommand(stream, group, write)).catch(() => undefined),
    );
    const [count] = await Promise.all([acked, ...writes]);
    return Number(count);
  }

  async autoClaim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    cursor: string,
    count: number,
  ): Promise<AutoClaimPage> {
    const reply = (await this.link.send([
      'XAUTOCLAIM',
      stream,
      group,
      consumer,
      minIdleMs,
      cursor,
      'COUNT',
      count,
    ])) as [string, unknown[], string[] | undefined];
    const entries: RawEntry[] = [];
    const deletedIds = Array.isArray(reply[2]) ? reply[2].map(String) : [];
    for (const item of reply[1] ?? []) {
      // Redis 6.2 answers a deleted entry as nil (or [id, nil]) instead of the third element.
      if (item === null) continue;
      const entry = parseEntry(item);
      if (entry.fields === null) deletedIds.push(entry.entryId);
      else entries.push(entry);
    }
    return { cursor: String(reply[0]), entries, deletedIds };
  }

  async pending(stream: string, group: string, query: PendingQuery): Promise<PendingRow[]> {
    const args: Array<string | number> = ['XPENDING', stream, group];
    if (query.minIdleMs !== undefined) args.push('IDLE', query.minIdleMs);
    args.push(query.start, query.end, query.count);
    if (query.consumer !== undefined) args.push(query.consumer);
    const reply = (await this.link.send(args)) as Array<[string, string, number, number]>;
    return reply.map((row) => ({
      entryId: String(row[0]),
      consumer: String(row[1]),
      idleMs: Number(row[2]),
      deliveries: Number(row[3]),
    }));
  }

  async pendingCount(stream: string, group: string): Promise<number> {
    const reply = (await this.link.send(['XPENDING', stream, group])) as unknown[];
    return Number(reply[0]);
  }

  async claim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    ids: readonly string[],
  ): Promise<RawEntry[]> {
    if (ids.length === 0) return [];
    const reply = (await this.link.send([
      'XCLAIM',
      stream,
      group,
      consumer,
      minIdleMs,
      ...ids,
    ])) as unknown[];
    const out: RawEntry[] = [];
    for (const item of reply) if (item !== null) out.push(parseEntry(item));
    return out;
  }

  async touch(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
  ): Promise<void> {
    if (ids.length === 0) return;
    await this.link.send(['XCLAIM', stream, group, consumer, 0, ...ids, 'JUSTID']);
  }

  async release(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
    idleMs: number,
    deliveries?: readonly number[],
  ): Promise<void> {
    if (deliveries === undefined) {
      // counts kept as they are (a waiting retry: its failed attempt was a real delivery)
      await this.link.send([
        'XCLAIM',
        stream,
        group,
        consumer,
        0,
        ...ids,
        'IDLE',
        idleMs,
        'JUSTID',
      ]);
      return;
    }
    // RETRYCOUNT is one per XCLAIM: one call per distinct count (usually one, a fresh read's 0)
    const byCount = new Map<number, string[]>();
    ids.forEach((id, i) => {
      const count = deliveries[i];
      const same = byCount.get(count);
      if (same) same.push(id);
      else byCount.set(count, [id]);
    });
    await Promise.all(
      [...byCount].map(([count, same]) =>
        this.link.send([
          'XCLAIM',
          stream,
          group,
          consumer,
          0,
          ...same,
          'IDLE',
          idleMs,
          'RETRYCOUNT',
          count,
          'JUSTID',
        ]),
      ),
    );
  }

  async takeRateBudget(
    stream: string,
    group: string,
    max: number,
    perMs: number,
    want: number,
  ): Promise<RateBudgetGrant> {
    const args = [rateBudgetKey(stream, group), max, perMs, want];
    let reply: unknown;
    try {
      reply = await this.link.send(['EVALSHA', RATE_BUDGET_SHA, 1, ...args]);
    } catch (err) {
      if (!isNoScriptError(err)) throw err;
      reply = await this.link.send(['EVAL', RATE_BUDGET_SCRIPT, 1, ...args]);
    }
    const [granted, windowLeftMs] = reply as [number, number];
    return { granted: Number(granted), windowLeftMs: Math.max(1, Number(windowLeftMs)) };
  }

  async ackRecording(
    stream: string,
    group: string,
    ids: readonly string[],
    records: readonly SkipRecord[],
    along: readonly AlongAck[] = [],
  ): Promise<number> {
    if (records.length === 0) return this.ack(stream, group, ids, along);
    const keys = [stream];
    const recordArgs: Array<string | number> = [];
    for (const record of records) {
      if (record.kind === 'acked') {
        keys.push(ackedIdKey(stream, group, record.id));
        recordArgs.push('set', record.id, record.ttlMs);
      } else {
        keys.push(newestIdKey(stream, group, record.key));
        recordArgs.push('max', record.id, record.ttlMs);
      }
    }
    const args = [keys.length, ...keys, group, ids.length, ...ids, ...recordArgs];
    const acked = this.link.send(['EVALSHA', ACK_RECORDS_SHA, ...args]).catch((err: unknown) => {
      if (!isNoScriptError(err)) throw err;
      return this.link.send(['EVAL', ACK_RECORDS_SCRIPT, ...args]);
    });
    return this.withAlong(stream, group, acked, along);
  }

  async readRecords(
    stream: string,
    group: string,
    queries: readonly SkipQuery[],
  ): Promise<Array<string | null>> {
    if (queries.length === 0) return [];
    const keys = queries.map((query) =>
      query.kind === 'acked'
        ? ackedIdKey(stream, group, query.id)
        : newestIdKey(stream, group, query.key),
    );
    const reply = (await this.link.send(['MGET', ...keys])) as unknown[];
    return reply.map((value) => (value === null || value === undefined ? null : String(value)));
  }
}

/** The command of a write sent along an XACK. */
function alongAckCommand(stream: string, group: string, write: AlongAck): string[] {
  switch (write.kind) {
    case 'dropCheckpoints':
      return ['HDEL', checkpointKeyOf(stream, group), ...write.entryIds];
  }
}
