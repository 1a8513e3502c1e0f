import { errorText } from '../../codec/codecs';
import { isReplyError } from '../../redis/redis-errors';
import type { PendingProbeRow, PendingProbes } from '../../redis/stream-roles';
import type { ConsumerLogger } from '../context';
import type { SweepSchedule } from '../health';

/** What the pending probe of one partitioned handler needs. */
export interface PartitionSweepsConfig {
  readonly group: string;
  /** `'Class.method on stream/group'`, for logs. */
  readonly where: string;
  readonly logger: ConsumerLogger;
  /** The handler's `claimIntervalMs`: the probe's pace while a PEL holds entries. */
  readonly claimIntervalMs: number;
  /** The handler's `minIdleMs`: an entry idle this long is a sweep's work. */
  readonly minIdleMs: number;
  /** Where the PELs are read (one script call per hash slot). */
  readonly probes: Pick<PendingProbes, 'probe'>;
  /** Clock, for tests. @default Date.now */
  readonly now?: () => number;
  /** Where in `claimIntervalMs` the first probe falls (0..1). @default Math.random() */
  readonly phase?: number;
}

/** The sweep schedule of one partition loop, from {@link PartitionSweeps.join}. */
export interface PartitionSweep extends SweepSchedule {
  /** The loop stopped: its stream is probed no more. */
  leave(): void;
}

/** One partition loop as the probe sees it. */
interface Member {
  readonly stream: string;
  /** Ends the loop's parked read, so it sweeps now. */
  readonly wake: () => void;
  /** When the probe found work for its sweep (`null`: none found). */
  dueSince: number | null;
}

/**
 * The sweeps of one partitioned handler's loops (docs/partitions.md "Idle cost"). A plain loop
 * sweeps on its own pace: an XPENDING summary every `max(claimIntervalMs, minIdleMs / 2)` while
 * its group's PEL is empty, which for P partition loops is P summaries and P parked reads cut
 * short. Here one probe per interval reads the PEL of every partition the handler owns (one
 * script call per hash slot): a loop sweeps (poison sweep, reclaim) only when its PEL holds an
 * entry idle past `minIdleMs`, or cannot be read (the loop then meets the error itself), and the
 * probe wakes it from its parked read to do so. The pace is the plain loop's: `claimIntervalMs`
 * while a PEL holds entries or a loop has read since the last probe, else `max(claimIntervalMs,
 * minIdleMs / 2)` (nothing can pass `minIdleMs` idle sooner: a new delivery shows in the next
 * probe). So an entry left pending by another consumer (a frozen old owner that read after the
 * take-over) is still reclaimed at most `claimIntervalMs` after it passed `minIdleMs`. A probe
 * that fails makes every loop sweep on its own once (the summary it would have sent anyway).
 */
export class PartitionSweeps {
  private readonly members = new Map<string, Member>();
  private readonly now: () => number;
  private readonly phase: number;
  private timer: NodeJS.Timeout | undefined;
  /** When the next probe is due; `Infinity` before the first member joins. */
  private dueAt = Number.POSITIVE_INFINITY;
  /** The last probe found every PEL empty and no loop has read since. */
  private quiet = false;
  /** Reads reported by the loops (a probe that saw none since it began may call the group quiet). */
  private reads = 0;
  private probing: Promise<void> | null = null;
  private stopped = false;
  private refusedBefore = false;

  constructor(private readonly config: PartitionSweepsConfig) {
    this.now = config.now ?? Date.now;
    this.phase = config.phase ?? Math.random();
  }

  /**
   * The schedule of the loop on partition stream `stream`; `wake` ends its parked read when its
   * sweep comes due. The first probe falls within `claimIntervalMs` of the first join.
   */
  join(stream: string, wake: () => void): PartitionSweep {
    const member: Member = { stream, wake, dueSince: null };
    this.members.set(stream, member);
    if (this.dueAt === Number.POSITIVE_INFINITY && !this.stopped)
      this.schedule(this.now() + Math.max(1, Math.floor(this.config.claimIntervalMs * this.phase)));
    const { claimIntervalMs, minIdleMs } = this.config;
    const now = this.now;
    return {
      // no sweep before the probe finds work, and then the probe wakes the loop: its park need
      // not end for a sweep (it ends for the pause flag, a retry or blockMs anyway)
      get nextAt() {
        return member.dueSince ?? now() + Math.max(claimIntervalMs, Math.floor(minIdleMs / 2));
      },
      due: () => member.dueSince !== null,
      swept: () => {
        member.dueSince = null;
      },
      delivered: () => this.delivered(),
      leave: () => {
        if (this.members.get(stream) === member) this.members.delete(stream);
      },
    };
  }

  /** Stops probing (the handler stops). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One probe now, unless one is running (tests; the timer calls it). Never rejects. */
  probe(): Promise<void> {
    this.probing ??= this.runProbe().finally(() => (this.probing = null));
    return this.probing;
  }

  /** A loop read entries: deliveries again, so a quiet handler probes at the normal pace. */
  private delivered(): void {
    this.reads++;
    if (!this.quiet) return;
    this.quiet = false;
    const soon = this.now() + this.config.claimIntervalMs;
    if (soon < this.dueAt && !this.probing) this.schedule(soon);
  }

  private async runProbe(): Promise<void> {
    const { claimIntervalMs, minIdleMs } = this.config;
    const startedAt = this.now();
    const readsBefore = this.reads;
    const members = [...this.members.values()];
    let empty = true;
    if (members.length > 0) {
      let rows: PendingProbeRow[];
      try {
        rows = await this.config.probes.probe(
          this.config.group,
          members.map((m) => m.stream),
          minIdleMs,
        );
      } catch (err) {
        this.failed(err);
        rows = members.map(() => ({ pending: null, idle: true }));
      }
      members.forEach((member, i) => {
        const row = rows[i];
        if (row?.pending !== 0) empty = false;
        if (row === undefined || row.pending === null || row.idle) this.due(member);
      });
    }
    this.quiet = empty && this.reads === readsBefore;
    const next = this.quiet
      ? Math.max(claimIntervalMs, Math.floor(minIdleMs / 2))
      : claimIntervalMs;
    if (!this.stopped) this.schedule(startedAt + next);
  }

  /** Work for the loop's sweep: it sweeps at its next beat, woken from its read for it. */
  private due(member: Member): void {
    if (this.members.get(member.stream) !== member || member.dueSince !== null) return;
    member.dueSince = this.now();
    member.wake();
  }

  private failed(err: unknown): void {
    const { where, logger } = this.config;
    const text = `${where}: pending probe failed (${errorText(err)}); each partition loop sweeps on its own`;
    // a refusal (an ACL without EVALSHA / EVAL) stays: say it once, loudly
    if (isReplyError(err) && !this.refusedBefore) {
      this.refusedBefore = true;
      logger.warn(text);
    } else logger.debug?.(text);
  }

  private schedule(at: number): void {
    clearTimeout(this.timer);
    this.dueAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        void this.probe();
      },
      Math.max(0, at - this.now()),
    );
  }
}
