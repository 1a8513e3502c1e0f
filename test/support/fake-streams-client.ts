/**
 * A small in-memory `StreamsClient` for unit tests of the consumer engine, the producer, the admin
 * and the stats: one model of streams, groups and PELs that behaves like Redis 7 where the engine
 * cares (delivery counts, idle times, XAUTOCLAIM's deleted ids, XCLAIM dropping deleted entries),
 * plus call recording, injected faults and per-method overrides for replies that are hard to get
 * from a real server (or from this model, such as XINFO's lag).
 */
import type {
  AutoClaimPage,
  ConsumerInfo,
  GroupInfo,
  PendingQuery,
  PendingRow,
  RawEntry,
  StreamsClient,
} from '../../lib/redis/streams-client';
import type {
  AlongAck,
  SkipQuery,
  SkipRecord,
} from '../../lib/redis/stream-roles';

/** One recorded call. */
export interface FakeCall {
  method: keyof StreamsClient;
  args: unknown[];
  /** `Date.now()` when the call was made. */
  at: number;
}

/** A fault armed with {@link FakeStreamsClient.fail}. */
interface Fault {
  times: number;
  error: Error;
  when?: (args: unknown[]) => boolean;
}

interface PelRow {
  consumer: string;
  deliveries: number;
  deliveredAt: number;
}

interface GroupState {
  lastId: string;
  pel: Map<string, PelRow>;
}

interface StoredEntry {
  entryId: string;
  fields: string[];
}

type Overrides = { [K in keyof StreamsClient]?: StreamsClient[K] };

/** Compares two entry ids (`ms-seq`) numerically. */
export function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am !== bm ? am - bm : (as ?? 0) - (bs ?? 0);
}

/** `'-'`, `'+'`, `'(id'` (exclusive) or `'id'` -> a predicate for one end of a range. */
function lowerBound(start: string): (id: string) => boolean {
  if (start === '-') return () => true;
  if (start.startsWith('(')) return (id) => compareIds(id, start.slice(1)) > 0;
  return (id) => compareIds(id, start) >= 0;
}

function upperBound(end: string): (id: string) => boolean {
  if (end === '+') return () => true;
  if (end.startsWith('(')) return (id) => compareIds(id, end.slice(1)) < 0;
  return (id) => compareIds(id, end) <= 0;
}

/** An in-memory Redis 7 streams model that records every call. */
export class FakeStreamsClient implements StreamsClient {
  /** Every call, in order. */
  readonly calls: FakeCall[] = [];
  /** Replace one method's behaviour (the call is still recorded and faults still apply first). */
  readonly overrides: Overrides = {};
  private readonly streams = new Map<string, StoredEntry[]>();
  private readonly groupStates = new Map<string, GroupState>();
  private readonly faults = new Map<keyof StreamsClient, Fault[]>();
  /**
   * The `dedup` / `newerWins` records (docs/delivery.md "Duplicates and stale replays"), by
   * stream, group and branded id or key: written by `ackRecording` with the XACK (`newest` as a
   * compare-and-set), read by `readRecords`.
   */
  readonly skipRecords = { acked: new Set<string>(), newest: new Map<string, string>() };
  private seq = 0;
  private waiters = new Set<() => void>();
  closed = false;

  /** Calls of one method (optionally filtered). */
  callsOf(method: keyof StreamsClient, filter?: (args: unknown[]) => boolean): FakeCall[] {
    return this.calls.filter((c) => c.method === method && (!filter || filter(c.args)));
  }

  /** The next `times` calls of `method` (matching `when`, if given) reject with `error`. */
  fail(
    method: keyof StreamsClient,
    options: { times?: number; error?: Error; when?: (args: unknown[]) => boolean } = {},
  ): void {
    const list = this.faults.get(method) ?? [];
    list.push({
      times: options.times ?? 1,
      error: options.error ?? new Error(`ERR injected ${method} failure`),
      when: options.when,
    });
    this.faults.set(method, list);
  }

  // ---- test-side helpers (not recorded) ------------------------------------------------------

  /** XADD without recording; returns the entry id. */
  seed(stream: string, fields: readonly string[]): string {
    return this.append(stream, fields);
  }

  /** Seeds `count` json entries `id=<prefix>-i`, `data={"i":i}`; returns their entry ids. */
  seedJson(stream: string, count: number, prefix = 'evt'): string[] {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(this.append(stream, ['id', `${prefix}-${i}`, 'data', JSON.stringify({ i })]));
    }
    return ids;
  }

  /** Creates a group at `0` without recording. */
  seedGroup(stream: string, group: string): void {
    if (!this.streams.has(stream)) this.streams.set(stream, []);
    if (!this.groupStates.has(this.key(stream, group))) {
      this.groupStates.set(this.key(stream, group), { lastId: '0-0', pel: new Map() });
    }
  }

  /** Delivers up to `count` new entries to `consumer` (a peer's XREADGROUP `>`), not recorded. */
  deliverTo(stream: string, group: string, consumer: string, count: number): string[] {
    this.seedGroup(stream, group);
    return this.readNew(stream, group, consumer, count).map((e) => e.entryId);
  }

  /** Makes every pending entry of the group look idle for `ms` (and bumps deliveries if asked). */
  age(stream: string, group: string, ms: number, extraDeliveries = 0): void {
    const state = this.groupStates.get(this.key(stream, group));
    if (!state) return;
    for (const row of state.pel.values()) {
      row.deliveredAt = Date.now() - ms;
      row.deliveries += extraDeliveries;
    }
  }

  /** A peer (re)claims `ids` now: they look freshly delivered to `consumer` (not recorded). */
  hold(stream: string, group: string, consumer: string, ids: readonly string[]): void {
    const state = this.groupStates.get(this.key(stream, group));
    for (const id of ids) {
      const row = state?.pel.get(id);
      if (!row) continue;
      row.consumer = consumer;
      row.deliveredAt = Date.now();
    }
  }

  /** XDEL without recording. */
  deleteEntries(stream: string, ids: readonly string[]): void {
    const entries = this.streams.get(stream) ?? [];
    this.streams.set(
      stream,
      entries.filter((e) => !ids.includes(e.entryId)),
    );
  }

  /** The group's PEL now: id -> { consumer, deliveries, idleMs }. */
  pel(
    stream: string,
    group: string,
  ): Map<string, { consumer: string; deliveries: number; idleMs: number }> {
    const out = new Map<string, { consumer: string; deliveries: number; idleMs: number }>();
    const state = this.groupStates.get(this.key(stream, group));
    if (!state) return out;
    const now = Date.now();
    for (const [id, row] of state.pel) {
      out.set(id, {
        consumer: row.consumer,
        deliveries: row.deliveries,
        idleMs: now - row.deliveredAt,
      });
    }
    return out;
  }

  /** Entries of a stream (for the dead-letter stream). */
  entries(stream: string): StoredEntry[] {
    return [...(this.streams.get(stream) ?? [])];
  }

  // ---- StreamsClient -------------------------------------------------------------------------

  async createGroup(stream: string, group: string, startId: string): Promise<boolean> {
    const over = this.enter('createGroup', [stream, group, startId]);
    if (over) return over;
    if (this.groupStates.has(this.key(stream, group))) return false;
    const entries = this.streams.get(stream) ?? [];
    this.streams.set(stream, entries);
    const lastId =
      startId === '$'
        ? entries.length
          ? entries[entries.length - 1].entryId
          : '0-0'
        : startId === '0'
          ? '0-0'
          : startId;
    this.groupStates.set(this.key(stream, group), { lastId, pel: new Map() });
    return true;
  }

  async readGroup(
    stream: string,
    group: string,
    consumer: string,
    count: number,
    id: string,
    blockMs?: number,
    marginMs?: number,
    claimIdleMs?: number,
  ): Promise<RawEntry[]> {
    const args = [stream, group, consumer, count, id, blockMs, marginMs, claimIdleMs];
    const over = this.enter('readGroup', args);
    if (over) return over;
    this.state(stream, group);
    if (id !== '>') return this.readOwn(stream, group, consumer, count, id);
    let got = this.readNew(stream, group, consumer, count);
    if (got.length > 0 || blockMs === undefined) return got;
    await this.park(blockMs);
    if (this.closed) return [];
    got = this.readNew(stream, group, consumer, count);
    return got;
  }

  async readGroups(
    group: string,
    consumer: string,
    count: number,
    streams: readonly string[],
    blockMs?: number,
    uninterruptibleMs?: number,
    marginMs?: number,
    claimIdleMs?: number,
  ): Promise<Map<string, RawEntry[]>> {
    const args = [
      group,
      consumer,
      count,
      [...streams],
      blockMs,
      uninterruptibleMs,
      marginMs,
      claimIdleMs,
    ];
    const over = this.enter('readGroups', args);
    if (over) return over;
    const collect = (): Map<string, RawEntry[]> => {
      const out = new Map<string, RawEntry[]>();
      for (const stream of streams) {
        this.state(stream, group);
        const got = this.readNew(stream, group, consumer, count);
        if (got.length > 0) out.set(stream, got);
      }
      return out;
    };
    const got = collect();
    if (got.size > 0 || blockMs === undefined) return got;
    await this.park(blockMs);
    return this.closed ? new Map() : collect();
  }

  async pendingCount(stream: string, group: string): Promise<number> {
    const over = this.enter('pendingCount', [stream, group]);
    if (over) return over;
    return this.state(stream, group).pel.size;
  }

  async interruptRead(mayDrop?: boolean): Promise<void> {
    this.record('interruptRead', [mayDrop]);
    this.wakeAll();
  }

  async ack(stream: string, group: string, ids: readonly string[]): Promise<number> {
    const over = this.enter('ack', [stream, group, [...ids]]);
    if (over) return over;
    const state = this.groupStates.get(this.key(stream, group));
    let n = 0;
    for (const id of ids) if (state?.pel.delete(id)) n++;
    return n;
  }

  async ackRecording(
    stream: string,
    group: string,
    ids: readonly string[],
    records: readonly SkipRecord[],
    _along?: readonly AlongAck[],
  ): Promise<number> {
    const over = this.enter('ackRecording', [stream, group, [...ids], [...records]]);
    if (over) return over;
    for (const record of records) {
      if (record.kind === 'acked') {
        this.skipRecords.acked.add(this.recordKey(stream, group, record.id));
        continue;
      }
      const key = this.recordKey(stream, group, record.key);
      const current = this.skipRecords.newest.get(key);
      if (current === undefined || record.id > current) this.skipRecords.newest.set(key, record.id);
    }
    const state = this.groupStates.get(this.key(stream, group));
    let acked = 0;
    for (const id of ids) if (state?.pel.delete(id)) acked++;
    return acked;
  }

  async readRecords(
    stream: string,
    group: string,
    queries: readonly SkipQuery[],
  ): Promise<Array<string | null>> {
    const over = this.enter('readRecords', [stream, group, [...queries]]);
    if (over) return over;
    return this.recordsOf(stream, group, queries);
  }

  private recordsOf(
    stream: string,
    group: string,
    queries: readonly SkipQuery[],
  ): Array<string | null> {
    return queries.map((query) =>
      query.kind === 'acked'
        ? this.skipRecords.acked.has(this.recordKey(stream, group, query.id))
          ? query.id
          : null
        : (this.skipRecords.newest.get(this.recordKey(stream, group, query.key)) ?? null),
    );
  }

  async autoClaim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    cursor: string,
    count: number,
  ): Promise<AutoClaimPage> {
    const over = this.enter('autoClaim', [stream, group, consumer, minIdleMs, cursor, count]);
    if (over) return over;
    const state = this.state(stream, group);
    const now = Date.now();
    const ids = [...state.pel.keys()].filter((id) => compareIds(id, cursor) >= 0).sort(compareIds);
    const entries: RawEntry[] = [];
    const deletedIds: string[] = [];
    let i = 0;
    for (; i < ids.length && entries.length + deletedIds.length < count; i++) {
      const row = state.pel.get(ids[i])!;
      if (now - row.deliveredAt < minIdleMs) continue;
      const fields = this.fieldsOf(stream, ids[i]);
      if (fields === null) {
        state.pel.delete(ids[i]);
        deletedIds.push(ids[i]);
        continue;
      }
      row.consumer = consumer;
      row.deliveries++;
      row.deliveredAt = now;
      entries.push({ entryId: ids[i], fields });
    }
    return { cursor: i < ids.length ? ids[i] : '0-0', entries, deletedIds };
  }

  async takeOver(
    stream: string,
    group: string,
    consumer: string,
    cursor: string,
    count: number,
  ): Promise<{ cursor: string; ids: string[] }> {
    const over = this.enter('takeOver', [stream, group, consumer, cursor, count]);
    if (over) return over;
    const state = this.state(stream, group);
    const ids = [...state.pel.keys()].filter((id) => compareIds(id, cursor) >= 0).sort(compareIds);
    const taken = ids.slice(0, count);
    // JUSTID: the owner moves, the delivery count and time stay
    for (const id of taken) state.pel.get(id)!.consumer = consumer;
    return { cursor: ids.length > count ? ids[count] : '0-0', ids: taken };
  }

  async pending(stream: string, group: string, query: PendingQuery): Promise<PendingRow[]> {
    const over = this.enter('pending', [stream, group, { ...query }]);
    if (over) return over;
    const state = this.state(stream, group);
    const now = Date.now();
    const lo = lowerBound(query.start);
    const hi = upperBound(query.end);
    const rows: PendingRow[] = [];
    for (const id of [...state.pel.keys()].sort(compareIds)) {
      if (rows.length >= query.count) break;
      const row = state.pel.get(id)!;
      if (!lo(id) || !hi(id)) continue;
      if (query.consumer !== undefined && row.consumer !== query.consumer) continue;
      const idleMs = now - row.deliveredAt;
      if (query.minIdleMs !== undefined && idleMs < query.minIdleMs) continue;
      rows.push({ entryId: id, consumer: row.consumer, idleMs, deliveries: row.deliveries });
    }
    return rows;
  }

  async claim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    ids: readonly string[],
  ): Promise<RawEntry[]> {
    const over = this.enter('claim', [stream, group, consumer, minIdleMs, [...ids]]);
    if (over) return over;
    return this.claimQuietly(stream, group, consumer, minIdleMs, ids);
  }

  /** XCLAIM's effect, not recorded as a call of its own. */
  private async claimQuietly(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    ids: readonly string[],
  ): Promise<RawEntry[]> {
    const state = this.state(stream, group);
    const now = Date.now();
    const won: RawEntry[] = [];
    for (const id of ids) {
      const row = state.pel.get(id);
      if (!row || now - row.deliveredAt < minIdleMs) continue;
      const fields = this.fieldsOf(stream, id);
      if (fields === null) {
        // Redis 7: XCLAIM drops a deleted entry from the PEL and does not return it
        state.pel.delete(id);
        continue;
      }
      row.consumer = consumer;
      row.deliveries++;
      row.deliveredAt = now;
      won.push({ entryId: id, fields });
    }
    return won;
  }

  async touch(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
  ): Promise<string[]> {
    const over = this.enter('touch', [stream, group, consumer, [...ids]]);
    if (over) return over;
    const state = this.state(stream, group);
    const lost: string[] = [];
    for (const id of ids) {
      const row = state.pel.get(id);
      if (!row || row.consumer !== consumer) {
        lost.push(id);
        continue;
      }
      row.deliveredAt = Date.now();
    }
    return lost;
  }

  async reclaim(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
  ): Promise<{ entries: RawEntry[]; lost: string[] }> {
    const over = this.enter('reclaim', [stream, group, consumer, [...ids]]);
    if (over) return over;
    const state = this.state(stream, group);
    const lost = ids.filter((id) => state.pel.get(id)?.consumer !== consumer);
    const mine = ids.filter((id) => !lost.includes(id));
    return { entries: await this.claimQuietly(stream, group, consumer, 0, mine), lost };
  }

  async release(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
    idleMs: number,
    deliveries?: readonly number[],
  ): Promise<void> {
    const args: unknown[] = [stream, group, consumer, [...ids], idleMs];
    if (deliveries !== undefined) args.push([...deliveries]);
    const over = this.enter('release', args);
    if (over) return over;
    const state = this.state(stream, group);
    ids.forEach((id, i) => {
      const row = state.pel.get(id);
      if (!row || row.consumer !== consumer) return; // a peer's: left as it is
      row.deliveredAt = Date.now() - idleMs;
      // without counts (a waiting retry), the delivery count stays as it is
      if (deliveries !== undefined) row.deliveries = deliveries[i];
    });
  }

  async add(stream: string, fields: readonly string[], maxLen?: number): Promise<string> {
    const over = this.enter('add', [stream, [...fields], maxLen]);
    if (over) return over;
    return this.append(stream, fields);
  }

  async addMany(
    items: ReadonlyArray<{ stream: string; fields: readonly string[]; maxLen?: number }>,
  ): Promise<string[]> {
    const over = this.enter('addMany', [items]);
    if (over) return over;
    return items.map((item) => this.append(item.stream, item.fields));
  }

  async range(stream: string, start: string, end: string, count: number): Promise<RawEntry[]> {
    const over = this.enter('range', [stream, start, end, count]);
    if (over) return over;
    const lo = lowerBound(start);
    const hi = upperBound(end);
    return (this.streams.get(stream) ?? [])
      .filter((e) => lo(e.entryId) && hi(e.entryId))
      .slice(0, count)
      .map((e) => ({ entryId: e.entryId, fields: [...e.fields] }));
  }

  async remove(stream: string, ids: readonly string[]): Promise<number> {
    const over = this.enter('remove', [stream, [...ids]]);
    if (over) return over;
    const before = this.streams.get(stream)?.length ?? 0;
    this.deleteEntries(stream, ids);
    return before - (this.streams.get(stream)?.length ?? 0);
  }

  async length(stream: string): Promise<number> {
    const over = this.enter('length', [stream]);
    if (over) return over;
    return this.streams.get(stream)?.length ?? 0;
  }

  async groups(stream: string): Promise<GroupInfo[]> {
    const over = this.enter('groups', [stream]);
    if (over) return over;
    const out: GroupInfo[] = [];
    for (const [key, state] of this.groupStates) {
      const [s, name] = key.split('\u0000');
      if (s === stream)
        out.push({ name, pending: state.pel.size, lag: null, lastDeliveredId: state.lastId });
    }
    return out;
  }

  async consumers(stream: string, group: string): Promise<ConsumerInfo[]> {
    const over = this.enter('consumers', [stream, group]);
    if (over) return over;
    const byName = new Map<string, ConsumerInfo>();
    for (const row of this.state(stream, group).pel.values()) {
      const info = byName.get(row.consumer) ?? { name: row.consumer, pending: 0, idleMs: 0 };
      info.pending++;
      byName.set(row.consumer, info);
    }
    return [...byName.values()];
  }

  async config(parameter: string): Promise<string | null> {
    const over = this.enter('config', [parameter]);
    if (over) return over;
    return null;
  }

  async close(): Promise<void> {
    this.record('close', []);
    this.closed = true;
    this.wakeAll();
  }

  // ---- internals -----------------------------------------------------------------------------

  private key(stream: string, group: string): string {
    return `${stream}\u0000${group}`;
  }

  private recordKey(stream: string, group: string, name: string): string {
    return `${stream}\u0000${group}\u0000${name}`;
  }

  private record(method: keyof StreamsClient, args: unknown[]): void {
    this.calls.push({ method, args, at: Date.now() });
  }

  /**
   * Records the call, throws an armed fault, or returns a promise from an override (the caller
   * returns it as is); `undefined` means "run the model".
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private enter(method: keyof StreamsClient, args: unknown[]): any {
    this.record(method, args);
    const faults = this.faults.get(method);
    const fault = faults?.find((f) => f.times > 0 && (!f.when || f.when(args)));
    if (fault) {
      fault.times--;
      return Promise.reject(fault.error);
    }
    const override = this.overrides[method] as ((...a: unknown[]) => unknown) | undefined;
    if (override) return Promise.resolve(override(...args));
    return undefined;
  }

  private state(stream: string, group: string): GroupState {
    const state = this.groupStates.get(this.key(stream, group));
    if (!state) throw new Error(`NOGROUP No such key '${stream}' or consumer group '${group}'`);
    return state;
  }

  private append(stream: string, fields: readonly string[]): string {
    const entries = this.streams.get(stream) ?? [];
    this.streams.set(stream, entries);
    const entryId = `${++this.seq}-0`;
    entries.push({ entryId, fields: [...fields] });
    this.wakeAll();
    return entryId;
  }

  private fieldsOf(stream: string, id: string): string[] | null {
    const entry = (this.streams.get(stream) ?? []).find((e) => e.entryId === id);
    return entry ? [...entry.fields] : null;
  }

  private readNew(stream: string, group: string, consumer: string, count: number): RawEntry[] {
    const state = this.state(stream, group);
    const now = Date.now();
    const fresh = (this.streams.get(stream) ?? [])
      .filter((e) => compareIds(e.entryId, state.lastId) > 0)
      .slice(0, count);
    for (const e of fresh) {
      state.pel.set(e.entryId, { consumer, deliveries: 1, deliveredAt: now });
      state.lastId = e.entryId;
    }
    return fresh.map((e) => ({ entryId: e.entryId, fields: [...e.fields] }));
  }

  /** XREADGROUP with an id: the own PEL after `id`; deleted entries come back with nil fields. */
  private readOwn(
    stream: string,
    group: string,
    consumer: string,
    count: number,
    id: string,
  ): RawEntry[] {
    const state = this.state(stream, group);
    const now = Date.now();
    const ids = [...state.pel.entries()]
      .filter(([eid, row]) => row.consumer === consumer && compareIds(eid, id) > 0)
      .map(([eid]) => eid)
      .sort(compareIds)
      .slice(0, count);
    return ids.map((eid) => {
      const row = state.pel.get(eid)!;
      row.deliveries++;
      row.deliveredAt = now;
      return { entryId: eid, fields: this.fieldsOf(stream, eid) };
    });
  }

  private park(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
