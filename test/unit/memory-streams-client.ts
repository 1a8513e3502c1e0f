/**
 * An in-memory stand-in for the StreamsClient commands the producer, stats and admin use
 * (XADD, XRANGE, XDEL, XLEN, XINFO, XPENDING), with a call log and injectable faults. The engine
 * commands throw: engine tests use their own fakes.
 */
import { compareEntryIds } from '../../lib/redis/entry-id';
import type {
  AutoClaimPage,
  ConsumerInfo,
  GroupInfo,
  PendingQuery,
  PendingRow,
  RawEntry,
  StreamsClient,
} from '../../lib/redis/streams-client';

/** One stream entry held in memory. */
export interface MemoryEntry {
  entryId: string;
  fields: string[];
}

export class MemoryStreamsClient implements StreamsClient {
  readonly streams = new Map<string, MemoryEntry[]>();
  readonly calls: string[] = [];
  /** The arguments of every XADD, in order. */
  readonly adds: Array<{ stream: string; fields: string[]; maxLen: number | undefined }> = [];
  readonly groupInfo = new Map<string, GroupInfo[]>();
  readonly consumerInfo = new Map<string, ConsumerInfo[]>();
  readonly pendingRows = new Map<string, PendingRow[]>();
  /** Set to make the next call of that command reject. */
  failNext: { command: string; error: Error } | null = null;
  private lastMs = 0;
  private seq = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  entries(stream: string): MemoryEntry[] {
    return this.streams.get(stream) ?? [];
  }

  private fault(command: string): void {
    this.calls.push(command);
    if (this.failNext?.command === command) {
      const { error } = this.failNext;
      this.failNext = null;
      throw error;
    }
  }

  private nextId(): string {
    const ms = Math.max(this.clock(), this.lastMs);
    this.seq = ms === this.lastMs ? this.seq + 1 : 0;
    this.lastMs = ms;
    return `${ms}-${this.seq}`;
  }

  async add(stream: string, fields: readonly string[], maxLen?: number): Promise<string> {
    this.fault('XADD');
    this.adds.push({ stream, fields: [...fields], maxLen });
    if (fields.length === 0 || fields.length % 2 !== 0) {
      throw new Error("ERR wrong number of arguments for 'xadd' command");
    }
    const list = this.streams.get(stream) ?? [];
    const entryId = this.nextId();
    list.push({ entryId, fields: [...fields] });
    if (maxLen !== undefined && list.length > maxLen) list.splice(0, list.length - maxLen);
    this.streams.set(stream, list);
    return entryId;
  }

  async addMany(
    items: ReadonlyArray<{ stream: string; fields: readonly string[]; maxLen?: number }>,
  ): Promise<string[]> {
    this.fault('PIPELINE');
    const ids: string[] = [];
    for (const item of items) ids.push(await this.add(item.stream, item.fields, item.maxLen));
    return ids;
  }

  async range(stream: string, start: string, end: string, count: number): Promise<RawEntry[]> {
    this.fault('XRANGE');
    const exclusive = start.startsWith('(');
    const from = exclusive ? start.slice(1) : start;
    return this.entries(stream)
      .filter((e) => {
        if (from === '-') return true;
        const cmp = compareEntryIds(e.entryId, from);
        return exclusive ? cmp > 0 : cmp >= 0;
      })
      .filter((e) => end === '+' || compareEntryIds(e.entryId, end) <= 0)
      .slice(0, count)
      .map((e) => ({ entryId: e.entryId, fields: [...e.fields] }));
  }

  async remove(stream: string, ids: readonly string[]): Promise<number> {
    this.fault('XDEL');
    const list = this.entries(stream);
    const keep = list.filter((e) => !ids.includes(e.entryId));
    this.streams.set(stream, keep);
    return list.length - keep.length;
  }

  async length(stream: string): Promise<number> {
    this.fault('XLEN');
    return this.entries(stream).length;
  }

  async groups(stream: string): Promise<GroupInfo[]> {
    this.fault('XINFO GROUPS');
    return this.groupInfo.get(stream) ?? [];
  }

  async consumers(stream: string, group: string): Promise<ConsumerInfo[]> {
    this.fault('XINFO CONSUMERS');
    const list = this.consumerInfo.get(`${stream}/${group}`);
    if (!list)
      throw new Error(`NOGROUP No such consumer group '${group}' for key name '${stream}'`);
    return list;
  }

  async pending(stream: string, group: string, query: PendingQuery): Promise<PendingRow[]> {
    this.fault('XPENDING');
    return (this.pendingRows.get(`${stream}/${group}`) ?? []).slice(0, query.count);
  }

  async config(): Promise<string | null> {
    return null;
  }

  async close(): Promise<void> {}

  createGroup(): Promise<boolean> {
    return unsupported('createGroup');
  }
  readGroup(): Promise<RawEntry[]> {
    return unsupported('readGroup');
  }
  interruptRead(): Promise<void> {
    return unsupported('interruptRead');
  }
  ack(): Promise<number> {
    return unsupported('ack');
  }
  autoClaim(): Promise<AutoClaimPage> {
    return unsupported('autoClaim');
  }
  claim(): Promise<RawEntry[]> {
    return unsupported('claim');
  }
  touch(): Promise<void> {
    return unsupported('touch');
  }
  release(): Promise<void> {
    return unsupported('release');
  }
}

function unsupported<T>(name: string): Promise<T> {
  return Promise.reject(new Error(`MemoryStreamsClient.${name} is not implemented`));
}
