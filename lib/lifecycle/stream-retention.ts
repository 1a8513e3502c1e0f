import { brandedIdOf, errorStack, errorText, fieldsToRecord } from '../codec/codecs';
import type { ConsumerLogger } from '../consumer/consumer.types';
import type { ArchivedEntry, RetentionReport } from '../interfaces/lifecycle.interface';
import { compareEntryIds, entryIdMs, nextEntryId } from '../codec/entry-id';
import type { LifecycleClient } from '../redis/lifecycle-client';
import type { RawEntry } from '../redis/stream-roles';
import type { ResolvedRetentionRule } from '../config/lifecycle-options';
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

/**
 * Safe retention of one stream (docs/operations.md "Retention and archive"): each `run()` (one per
 * interval) takes the stream's lock; the holder trims from the head what the rule asks for, never
 * at or above the floor (the oldest entry some group has not acknowledged), handing each page to
 * the archive method first. Processes that do not hold the lock only refresh their report. Plain
 * TypeScript.
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
      if (await lease.acquire()) {
        await lease.hold(() => this.trimAsHolder());
      } else {
        await this.observe(
          retentionFloor(await this.ctx.client.groupFloors(this.stream), this.ignore),
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

  private async trimAsHolder(): Promise<void> {
    const { client } = this.ctx;
    const groups = await client.groupFloors(this.stream);
    const floor = retentionFloor(groups, this.ignore);
    const length = await client.length(this.stream);
    if (length === 0 && groups.length === 0) {
      if (!this.warnedMissing) {
        this.warnedMissing = true;
        this.ctx.logger.warn(
          `Retention rule for stream '${this.stream}': no such stream on the server (yet); nothing to trim`,
        );
      }
    } else if (this.rule.maxLen === null && !this.ctx.archive) {
      await this.trimByAge(floor);
    } else {
      await this.trimByPages(floor, this.cuts(length));
    }
    await this.observe(floor, true);
  }

  private cuts(length: number): Cuts {
    const { maxAgeMs, maxLen } = this.rule;
    return {
      ageMinId: maxAgeMs === null ? null : `${Math.max(0, this.now() - maxAgeMs)}-0`,
      excess: maxLen === null ? 0 : Math.max(0, length - maxLen),
    };
  }

  /** Age only, no archive: one exact XTRIM MINID to the lower of the age cut and the floor. */
  private async trimByAge(floor: RetentionFloor): Promise<void> {
    const { ageMinId } = this.cuts(0);
    if (ageMinId === null) return;
    const bound =
      floor.minId !== null && compareEntryIds(floor.minId, ageMinId) < 0 ? floor.minId : ageMinId;
    if (!(await this.ctx.lease.renew())) return this.lostLock();
    this.trimmedTotal += await this.ctx.client.trimBelow(this.stream, bound);
  }

  /**
   * Walks the head of the stream a page at a time: the leading entries the rule wants gone and
   * the floor allows go to the archive method (when there is one), then are trimmed with an exact
   * MINID just past the last of them. It stops at the first entry it must keep, on an archive
   * throw (that page stays), or when the lock was lost.
   */
  private async trimByPages(floor: RetentionFloor, cuts: Cuts): Promise<void> {
    const { client, lease, archive } = this.ctx;
    let excess = cuts.excess;
    for (;;) {
      // trimmed entries are gone: the head of the stream is always the next page
      const page = await client.range(this.stream, '-', '+', this.pageSize);
      const take: RawEntry[] = [];
      for (const entry of page) {
        if (!this.wanted(entry.entryId, excess - take.length, cuts.ageMinId)) break;
        if (floor.minId !== null && compareEntryIds(entry.entryId, floor.minId) >= 0) break;
        take.push(entry);
      }
      if (take.length === 0) return;
      const lastId = take[take.length - 1].entryId;
      if (archive) {
        if (!(await lease.renew())) return this.lostLock();
        try {
          await archive.call(take.map(toArchivedEntry));
        } catch (err) {
          this.ctx.logger.error(
            `@StreamArchive ${archive.name} failed on ${take.length} entries of '${this.stream}' ` +
              `(${take[0].entryId} .. ${lastId}): ${errorText(err)}; none of them trimmed, retried next interval`,
            errorStack(err),
          );
          return;
        }
      }
      if (!(await lease.renew())) return this.lostLock();
      const deleted = await client.trimBelow(this.stream, nextEntryId(lastId));
      this.trimmedTotal += deleted;
      excess -= take.length;
      if (deleted === 0 || take.length < page.length) return;
    }
  }

  /** True when the rule wants the entry gone (beyond the newest maxLen, or older than maxAgeMs). */
  private wanted(entryId: string, excess: number, ageMinId: string | null): boolean {
    return excess > 0 || (ageMinId !== null && compareEntryIds(entryId, ageMinId) < 0);
  }

  private lostLock(): void {
    this.ctx.logger.warn(
      `Retention of stream '${this.stream}': the lock ${this.ctx.lease.key} expired during the run ` +
        `(another process may hold it now); stopped before trimming more`,
    );
  }

  /**
   * Refreshes the report: length, oldest entry, and the group holding the floor back when the
   * oldest entry is one the rule wants gone. The lock holder also names that group in a warning.
   */
  private async observe(floor: RetentionFloor, holder = false): Promise<void> {
    const { client } = this.ctx;
    const [length, head] = await Promise.all([
      client.length(this.stream),
      client.range(this.stream, '-', '+', 1),
    ]);
    const oldest = head[0]?.entryId ?? null;
    const cuts = this.cuts(length);
    const heldBackBy =
      oldest !== null &&
      floor.group !== null &&
      floor.minId !== null &&
      compareEntryIds(oldest, floor.minId) >= 0 &&
      this.wanted(oldest, cuts.excess, cuts.ageMinId)
        ? floor.group
        : null;
    if (holder && heldBackBy !== null) {
      this.ctx.logger.warn(
        `Retention of stream '${this.stream}' is held back by group '${heldBackBy}': it has not ` +
          `acknowledged entry ${floor.minId ?? '?'} yet (not delivered, or pending), so nothing from ` +
          `there on is trimmed (length ${length}, oldest ${oldest}). If nobody reads that group any ` +
          `more, delete it or list it in ignoreGroups`,
      );
    }
    this.last = { heldBackBy, oldestEntryId: oldest, length, lastRunAt: new Date(this.now()) };
  }
}

/** A raw entry as the archive method receives it. */
export function toArchivedEntry(entry: RawEntry): ArchivedEntry {
  const fields = entry.fields ?? [];
  return {
    entryId: entry.entryId,
    id: brandedIdOf(fields) ?? entry.entryId,
    fields: fieldsToRecord(fields),
    at: new Date(entryIdMs(entry.entryId)),
  };
}
