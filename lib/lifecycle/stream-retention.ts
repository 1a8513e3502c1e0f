import { brandedIdOf, errorStack, errorText, fieldsToRecord } from '../codec/codecs';
import type { ConsumerLogger } from '../consumer';
import type { ArchivedEntry, RetentionReport } from '../interfaces/lifecycle.interface';
import { compareEntryIds, entryIdMs, nextEntryId } from '../codec/entry-id';
import { partitionStreamOf } from '../codec/partition-key';
import type { GroupFloorInfo, LifecycleClient } from '../redis/operator';
import type { RawEntry } from '../redis/stream-roles';
import type { ResolvedRetentionRule } from '../config/lifecycle-options';
import { MergedRange, type PartEntry } from './merged-range';
import { retentionFloor, type RetentionFloor } from './retention-floor';
import type { RetentionLease } from './retention-lease';

/** Entries read (and handed to the archive method) per page. */
export const RETENTION_PAGE_SIZE = 1000;

/** The `@StreamArchive` method of a stream, bound to its instance. */
export interface ArchiveMethod {
  /** `'Class.method'`, for logs. */
  name: string;
  call(entries: ArchivedEntry[]): unknown;
}

/** Everything one stream's retention needs (no Nest types). */
export interface StreamRetentionContext {
  rule: ResolvedRetentionRule;
  client: LifecycleClient;
  lease: RetentionLease;
  archive: ArchiveMethod | undefined;
  logger: ConsumerLogger;
  now?: () => number;
  pageSize?: number;
}

/** What a run decided to trim: the rule's cuts, before the floor. */
interface Cuts {
  /** Entries below this id are older than `maxAgeMs` (`null`: no age limit). */
  ageMinId: string | null;
  /** How many of the oldest entries are beyond the newest `maxLen` (0: none). */
  excess: number;
}

/** The Redis streams a rule trims: the stream, or each partition of a partitioned one. */
interface Parts {
  streams: string[];
  /** Partitioned: entries carry the index of their part as `partition`. */
  partitioned: boolean;
}

/**
 * Safe retention of one stream (docs/operations.md "Retention and archive"): each `run()` (one per
 * interval) takes the stream's lock; the holder trims from the head what the rule asks for, never
 * at or above the floor (the oldest entry some group has not acknowledged), handing each page to
 * the archive method first. Processes that do not hold the lock only refresh their report. A
 * partitioned stream is trimmed by its name as one stream: its partitions' entries in entry-id
 * order, `maxLen` of them all, each partition below its own floor. Plain TypeScript.
 */
export class StreamRetention {
  private trimmedTotal = 0;
  private last: Omit<RetentionReport, 'stream' | 'trimmedTotal'> = {
    heldBackBy: null,
    oldestEntryId: null,
    length: 0,
    lastRunAt: null,
  };
  private warnedMissing = false;
  private readonly rule: ResolvedRetentionRule;
  private readonly ignore: ReadonlySet<string>;
  private readonly now: () => number;
  private readonly pageSize: number;

  constructor(private readonly ctx: StreamRetentionContext) {
    this.rule = ctx.rule;
    this.ignore = new Set(ctx.rule.ignoreGroups);
    this.now = ctx.now ?? Date.now;
    this.pageSize = ctx.pageSize ?? RETENTION_PAGE_SIZE;
  }

  /** The stream this rule trims. */
  get stream(): string {
    return this.rule.stream;
  }

  /** Figures as of the last run. */
  report(): RetentionReport {
    return { stream: this.rule.stream, trimmedTotal: this.trimmedTotal, ...this.last };
  }

  /** One interval's work; never throws (a failure is logged and the next interval tries again). */
  async run(): Promise<void> {
    const { lease, logger } = this.ctx;
    try {
      const parts = await this.parts();
      if (await lease.acquire()) {
        await lease.hold(() => this.trimAsHolder(parts));
      } else {
        await this.observe(
          parts,
          (await this.groupsOf(parts)).map((groups) => this.floorOf(groups)),
        );
      }
    } catch (err) {
      logger.warn(
        `Retention of stream '${this.stream}' failed: ${errorText(err)}; nothing more trimmed, retried next interval`,
      );
    }
  }

  /** Releases the lock (at shutdown), so a peer takes over at its next interval. */
  async release(): Promise<void> {
    try {
      await this.ctx.lease.release();
    } catch {
      // it expires by itself
    }
  }

  /** The stream, or the partitions of a partitioned stream (its count read each run). */
  private async parts(): Promise<Parts> {
    const count = await this.ctx.client.partitionCount(this.stream);
    if (count === null) return { streams: [this.stream], partitioned: false };
    const streams = Array.from({ length: count }, (_, i) => partitionStreamOf(this.stream, i));
    return { streams, partitioned: true };
  }

  private groupsOf(parts: Parts): Promise<GroupFloorInfo[][]> {
    return Promise.all(parts.streams.map((stream) => this.ctx.client.groupFloors(stream)));
  }

  private floorOf(groups: readonly GroupFloorInfo[]): RetentionFloor {
    return retentionFloor(groups, this.ignore);
  }

  private async trimAsHolder(parts: Parts): Promise<void> {
    const { client } = this.ctx;
    const groups = await this.groupsOf(parts);
    const floors = groups.map((each) => this.floorOf(each));
    const lengths = await Promise.all(parts.streams.map((stream) => client.length(stream)));
    const length = lengths.reduce((sum, n) => sum + n, 0);
    if (length === 0 && groups.every((each) => each.length === 0)) {
      if (!this.warnedMissing) {
        this.warnedMissing = true;
        this.ctx.logger.warn(
          `Retention rule for stream '${this.stream}': no such stream on the server (yet); nothing to trim`,
        );
      }
    } else if (this.rule.maxLen === null && !this.ctx.archive) {
      await this.trimByAge(parts, floors);
    } else {
      await this.trimByPages(parts, floors, this.cuts(length));
    }
    await this.observe(parts, floors, true);
  }

  private cuts(length: number): Cuts {
    const { maxAgeMs, maxLen } = this.rule;
    return {
      ageMinId: maxAgeMs === null ? null : `${Math.max(0, this.now() - maxAgeMs)}-0`,
      excess: maxLen === null ? 0 : Math.max(0, length - maxLen),
    };
  }

  /**
   * Age only, no archive: per stream (each partition) one exact XTRIM MINID to the lower of the
   * age cut and its floor.
   */
  private async trimByAge(parts: Parts, floors: readonly RetentionFloor[]): Promise<void> {
    const { ageMinId } = this.cuts(0);
    if (ageMinId === null) return;
    for (const [i, stream] of parts.streams.entries()) {
      const floor = floors[i];
      const bound =
        floor.minId !== null && compareEntryIds(floor.minId, ageMinId) < 0 ? floor.minId : ageMinId;
      if (!(await this.ctx.lease.renew())) return void this.lostLock();
      this.trimmedTotal += await this.ctx.client.trimBelow(stream, bound);
    }
  }

  /**
   * Walks the heads of the streams in entry-id order a page at a time: the oldest entries the
   * rule wants gone (the first `excess` of them all, or older than `maxAgeMs`) that their
   * stream's floor allows go to the archive method (when there is one), then each stream is
   * trimmed with an exact MINID just past the last of them in it. An entry its floor keeps keeps
   * every later one of its stream (and still counts against `excess`). It stops at the first
   * entry the rule keeps, on an archive throw (that page stays), or when the lock was lost.
   */
  private async trimByPages(
    parts: Parts,
    floors: readonly RetentionFloor[],
    cuts: Cuts,
  ): Promise<void> {
    const range = new MergedRange(this.ctx.client, parts.streams, '-', '+', this.pageSize);
    const held = new Set<number>();
    let excess = cuts.excess;
    for (;;) {
      const step = await range.next();
      if (step.length === 0) return;
      const take: PartEntry[] = [];
      let done = false;
      for (const each of step) {
        const { part, entry } = each;
        if (!this.wanted(entry.entryId, excess, cuts.ageMinId)) {
          done = true;
          break;
        }
        excess--;
        const floor = floors[part].minId;
        if (held.has(part) || (floor !== null && compareEntryIds(entry.entryId, floor) >= 0)) {
          held.add(part);
          if (held.size === parts.streams.length) done = true;
          if (done) break;
          continue;
        }
        take.push(each);
      }
      if (take.length > 0 && !(await this.archiveAndTrim(parts, take))) return;
      if (done) return;
    }
  }

  /** Archives `take` (when there is an archive method), then trims it; false: stop the run. */
  private async archiveAndTrim(parts: Parts, take: readonly PartEntry[]): Promise<boolean> {
    const { client, lease, archive } = this.ctx;
    const first = take[0].entry.entryId;
    const last = take[take.length - 1].entry.entryId;
    if (archive) {
      if (!(await lease.renew())) return this.lostLock();
      try {
        await archive.call(
          take.map(({ part, entry }) =>
            toArchivedEntry(entry, parts.partitioned ? part : undefined),
          ),
        );
      } catch (err) {
        this.ctx.logger.error(
          `@StreamArchive ${archive.name} failed on ${take.length} entries of '${this.stream}' ` +
            `(${first} .. ${last}): ${errorText(err)}; none of them trimmed, retried next interval`,
          errorStack(err),
        );
        return false;
      }
    }
    if (!(await lease.renew())) return this.lostLock();
    // each stream just past the last of its entries taken: exactly what was archived
    const lastOf = new Map<number, string>();
    for (const { part, entry } of take) lastOf.set(part, entry.entryId);
    for (const [part, lastId] of lastOf)
      this.trimmedTotal += await client.trimBelow(parts.streams[part], nextEntryId(lastId));
    return true;
  }

  /** True when the rule wants the entry gone (beyond the newest maxLen, or older than maxAgeMs). */
  private wanted(entryId: string, excess: number, ageMinId: string | null): boolean {
    return excess > 0 || (ageMinId !== null && compareEntryIds(entryId, ageMinId) < 0);
  }

  /** Says the lock was lost during the run; `false`: stop the run. */
  private lostLock(): false {
    this.ctx.logger.warn(
      `Retention of stream '${this.stream}': the lock ${this.ctx.lease.key} expired during the run ` +
        `(another process may hold it now); stopped before trimming more`,
    );
    return false;
  }

  /**
   * Refreshes the report: length, oldest entry, and the group holding the floor back when the
   * oldest entry of a stream is one the rule wants gone (on a partitioned stream, the partition
   * whose held entry is oldest). The lock holder also names that group in a warning.
   */
  private async observe(
    parts: Parts,
    floors: readonly RetentionFloor[],
    holder = false,
  ): Promise<void> {
    const { client } = this.ctx;
    const [lengths, heads] = await Promise.all([
      Promise.all(parts.streams.map((stream) => client.length(stream))),
      Promise.all(parts.streams.map((stream) => client.range(stream, '-', '+', 1))),
    ]);
    const length = lengths.reduce((sum, n) => sum + n, 0);
    const cuts = this.cuts(length);
    let oldest: string | null = null;
    let held: { oldest: string; floor: RetentionFloor; stream: string } | null = null;
    for (const [i, head] of heads.entries()) {
      const first = head[0]?.entryId;
      if (first === undefined) continue;
      if (oldest === null || compareEntryIds(first, oldest) < 0) oldest = first;
      const floor = floors[i];
      const keeps =
        floor.group !== null &&
        floor.minId !== null &&
        compareEntryIds(first, floor.minId) >= 0 &&
        this.wanted(first, cuts.excess, cuts.ageMinId);
      if (keeps && (held === null || compareEntryIds(first, held.oldest) < 0))
        held = { oldest: first, floor, stream: parts.streams[i] };
    }
    const heldBackBy = held?.floor.group ?? null;
    if (holder && held !== null) {
      const where = parts.partitioned ? ` (partition stream '${held.stream}')` : '';
      this.ctx.logger.warn(
        `Retention of stream '${this.stream}' is held back by group '${heldBackBy}'${where}: it has not ` +
          `acknowledged entry ${held.floor.minId ?? '?'} yet (not delivered, or pending), so nothing from ` +
          `there on is trimmed (length ${length}, oldest ${held.oldest}). If nobody reads that group any ` +
          `more, delete it or list it in ignoreGroups`,
      );
    }
    this.last = { heldBackBy, oldestEntryId: oldest, length, lastRunAt: new Date(this.now()) };
  }
}

/** A raw entry as the archive method receives it (with its partition, on a partitioned stream). */
export function toArchivedEntry(entry: RawEntry, partition?: number): ArchivedEntry {
  const fields = entry.fields ?? [];
  return {
    entryId: entry.entryId,
    id: brandedIdOf(fields) ?? entry.entryId,
    fields: fieldsToRecord(fields),
    at: new Date(entryIdMs(entry.entryId)),
    ...(partition === undefined ? {} : { partition }),
  };
}
