import { type CommandLink, parseEntry, ServerFeatures } from '../connection';
import { RATE_BUDGET_SCRIPT, RATE_BUDGET_SHA } from './rate-budget.script';
import { rateBudgetKey, recordKeyHeads, type RecordKeyHeads } from '../package-keys';
import { ACK_RECORDS_SCRIPT, ACK_RECORDS_SHA } from './skip-records.script';
import { OWNED_CLAIM_SCRIPT, OWNED_CLAIM_SHA } from './pel-scripts';
import { isDeletion, withAlong } from './along-acks';
import { isBusyGroupError, isOomError, isRefusedScript } from '../redis-errors';
import { errorText } from '../../codec/codecs';
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
} from '../stream-roles';

/**
 * {@link LoopCommands} on one link: the group's setup, acks, claims and PEL queries of a loop.
 * Every command names its stream first, so on a Cluster it reaches the master of its slot.
 */
export class RedisLoopCommands implements LoopCommands {
  /** The heads of the skip record keys, by stream, then group (built once, not per record). */
  private readonly recordHeads = new Map<string, Map<string, RecordKeyHeads>>();

  /** False once the server refused the owner-checked claim's script: plain XCLAIM from then on. */
  private ownerChecks = true;

  /**
   * @param link where the commands go.
   * @param queries XINFO GROUPS, to tell whether a group exists when XGROUP CREATE cannot say.
   * @param features the server's newer verbs: XACKDEL for the acks of `deleteOnAck`.
   * @param warn told once when the server refuses the owner-checked claim (an ACL without
   *   `+evalsha +eval`), whose unchecked fallback it names.
   */
  constructor(
    private readonly link: CommandLink,
    private readonly queries: Pick<StreamQueries, 'groups'>,
    private readonly features = new ServerFeatures(link, 'baseline'),
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** True when `along` deletes entries and the server has XACKDEL / XDELEX to do it. */
  private xdelexFor(along: readonly AlongAck[]): boolean {
    return along.length > 0 && along.some(isDeletion) && this.features.uses('XACKDEL');
  }

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
    const deletion = along.find(isDeletion);
    if (deletion && deletion.entryIds.length === ids.length && this.xdelexFor(along)) {
      // XACKDEL: the XACK and the deletion in one command; per id 1 acked and deleted, 2 acked
      // and kept (another group still needs it), -1 not pending
      const mode = deletion.ackedByAll ? 'ACKED' : 'KEEPREF';
      const sent = this.link.send(['XACKDEL', stream, group, mode, 'IDS', ids.length, ...ids]);
      const rest = along.filter((write) => write !== deletion);
      const codes = (await withAlong(this.link, stream, group, sent, rest)) as unknown[];
      return codes.filter((code) => Number(code) > 0).length;
    }
    const acked = this.link.send(['XACK', stream, group, ...ids]);
    return Number(await withAlong(this.link, stream, group, acked, along));
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

  async takeOver(
    stream: string,
    group: string,
    consumer: string,
    cursor: string,
    count: number,
  ): Promise<{ cursor: string; ids: string[] }> {
    const reply = (await this.link.send([
      'XAUTOCLAIM',
      stream,
      group,
      consumer,
      0,
      cursor,
      'COUNT',
      count,
      'JUSTID',
    ])) as [string, unknown[]];
    return { cursor: String(reply[0]), ids: (reply[1] ?? []).map(String) };
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
    return claimedEntries(reply);
  }

  async touch(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
  ): Promise<string[]> {
    if (ids.length === 0) return [];
    return (await this.claimOwned(stream, group, consumer, ids, ['JUSTID'])).lost;
  }

  async reclaim(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
  ): Promise<{ entries: RawEntry[]; lost: string[] }> {
    if (ids.length === 0) return { entries: [], lost: [] };
    const { claimed, lost } = await this.claimOwned(stream, group, consumer, ids, []);
    return { entries: claimedEntries(claimed), lost };
  }

  async release(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
    idleMs: number,
    deliveries?: readonly number[],
  ): Promise<void> {
    if (ids.length === 0) return;
    if (deliveries === undefined) {
      // counts kept as they are (a waiting retry: its failed attempt was a real delivery)
      await this.claimOwned(stream, group, consumer, ids, ['IDLE', idleMs, 'JUSTID']);
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
        this.claimOwned(stream, group, consumer, same, [
          'IDLE',
          idleMs,
          'RETRYCOUNT',
          count,
          'JUSTID',
        ]),
      ),
    );
  }

  /**
   * OWNED_CLAIM_SCRIPT (pel-scripts.ts): XCLAIM ... 0 with `options` of only the ids the group's
   * PEL still names this consumer as the owner of; `lost`: the others.
   */
  private async claimOwned(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
    options: ReadonlyArray<string | number>,
  ): Promise<{ claimed: unknown[]; lost: string[] }> {
    if (this.ownerChecks) {
      const tail = [1, stream, group, consumer, options.length, ...options, ...ids];
      try {
        const [claimed, lost] = (await this.link.sendScript(
          OWNED_CLAIM_SCRIPT,
          OWNED_CLAIM_SHA,
          tail,
        )) as [unknown[], unknown[]];
        return { claimed, lost: lost.map(String) };
      } catch (err) {
        if (!isRefusedScript(err)) throw err;
        this.ownerChecks = false;
        this.warn(
          `Claims of held entries on this connection are not owner-checked: the server refused ` +
            `the script (${errorText(err)}); grant +evalsha +eval, or a process that froze past ` +
            `minIdleMs may take back what a peer took over (docs/operations.md "Redis ACL")`,
        );
      }
    }
    const claimed = (await this.link.send([
      'XCLAIM',
      stream,
      group,
      consumer,
      0,
      ...ids,
      ...options,
    ])) as unknown[];
    return { claimed, lost: [] };
  }

  async takeRateBudget(
    stream: string,
    group: string,
    max: number,
    perMs: number,
    want: number,
  ): Promise<RateBudgetGrant> {
    const args = [rateBudgetKey(stream, group), max, perMs, want];
    const reply = await this.link.sendScript(RATE_BUDGET_SCRIPT, RATE_BUDGET_SHA, [1, ...args]);
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
    const heads = this.headsOf(stream, group);
    // one array, built in place: numkeys, then KEYS (the stream, each record's key), then ARGV
    // (the group, the entry ids, the records in runs of one mode and ttl: a loop's records come
    // as its `dedup` ones, then its `newerWins` ones; see ACK_RECORDS_SCRIPT)
    const call: Array<string | number> = [1 + records.length, stream];
    for (const record of records) call.push(keyOf(heads, record));
    call.push(group, ids.length);
    for (const id of ids) call.push(id);
    const runsAt = call.push(0) - 1;
    let runs = 0;
    let countAt = -1;
    let count = 0;
    let mode = '';
    let ttlMs = -1;
    for (const record of records) {
      const next = record.kind === 'acked' ? 'set' : 'max';
      if (next !== mode || record.ttlMs !== ttlMs) {
        if (countAt >= 0) call[countAt] = count;
        mode = next;
        ttlMs = record.ttlMs;
        runs++;
        count = 0;
        countAt = call.push(mode, ttlMs, 0) - 1;
        // `set`: the value is the key's tail (the branded id), its head's length sent once
        if (mode === 'set') call.push(heads.ackedBytes);
      }
      if (record.kind === 'newest') call.push(record.id);
      count++;
    }
    if (countAt >= 0) call[countAt] = count;
    call[runsAt] = runs;
    const xdelex = this.xdelexFor(along);
    const reply = this.link.sendScript(ACK_RECORDS_SCRIPT, ACK_RECORDS_SHA, call);
    return Number(await withAlong(this.link, stream, group, reply, along, xdelex));
  }

  async readRecords(
    stream: string,
    group: string,
    queries: readonly SkipQuery[],
  ): Promise<Array<string | null>> {
    if (queries.length === 0) return [];
    const heads = this.headsOf(stream, group);
    const reply = (await this.link.send([
      'MGET',
      ...queries.map((q) => keyOf(heads, q)),
    ])) as unknown[];
    return reply.map(recordValue);
  }

  /** The record key heads of `stream` and `group`, built on first use. */
  private headsOf(stream: string, group: string): RecordKeyHeads {
    let byGroup = this.recordHeads.get(stream);
    if (byGroup === undefined) {
      byGroup = new Map();
      this.recordHeads.set(stream, byGroup);
    }
    let heads = byGroup.get(group);
    if (heads === undefined) {
      heads = recordKeyHeads(stream, group);
      byGroup.set(group, heads);
    }
    return heads;
  }
}

/** The key of the record `query` asks for (or a record of that kind and id / key is written to). */
function keyOf(heads: RecordKeyHeads, query: SkipQuery): string {
  return query.kind === 'acked' ? heads.acked + query.id : heads.newest + query.key;
}

/** A record's value as read (`null`: the key holds none). */
function recordValue(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** The entries of an XCLAIM reply (with bodies); an entry deleted from the stream is null there. */
function claimedEntries(reply: readonly unknown[]): RawEntry[] {
  const entries: RawEntry[] = [];
  for (const item of reply) if (item !== null) entries.push(parseEntry(item));
  return entries;
}
