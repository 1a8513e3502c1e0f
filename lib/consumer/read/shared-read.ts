import { isReplyError } from '../../redis/redis-errors';
import { stallMarginMs, type RawEntry, type StreamsClient } from '../../redis/stream-roles';
import type { BlockingReader } from './blocking-read';
import { commonClaim } from './read-claim';
import { unblockWhileParked } from './unblock';

/**
 * After a round, loops that left it (entries to handle, a sweep or a retry due) usually ask again
 * within a few ms; the next round waits that long for them, so their return does not need a
 * CLIENT UNBLOCK and a round of its own. Past it the round goes out and a late loop wakes it.
 */
const GATHER_MS = 5;
/** CLIENT UNBLOCK can overtake the read it targets on the wire: it is repeated this often... */
const NUDGE_EVERY_MS = 50;
/** ...at most this many times (then the round ends by its own BLOCK timeout). */
const NUDGE_TRIES = 40;
/**
 * Where CLIENT UNBLOCK is not allowed (CLIENT ID refused by an ACL), a loop that asks while a round
 * is parked cannot wake it: rounds of a read with more than one loop then park at most this long.
 */
const UNINTERRUPTIBLE_PARK_MS = 250;
/** A round that returns this close to a loop's deadline counts as having reached it. */
const DEADLINE_SLACK_MS = 2;

/** One loop's pending read. */
interface Waiter {
  /** The member whose loop asked. */
  readonly member: object;
  readonly stream: string;
  readonly count: number;
  readonly parkMs: number;
  /** Its loop's reads claim entries idle this long along (`readClaimIdleMs`), if at all. */
  readonly claimIdleMs: number | undefined;
  /** When the loop wants its read back, entries or not (absolute, `now()` ms). */
  readonly deadline: number;
  readonly resolve: (entries: RawEntry[]) => void;
  readonly reject: (err: unknown) => void;
  /** Its stream is named by the XREADGROUP on the wire now. */
  inRound: boolean;
  /** `interrupt()` asked: it leaves at the end of the current round. */
  leaving: boolean;
  /** Settles once the loop has its answer (entries, none, or an error). */
  answered?: Promise<void>;
}

/** The reader of one loop in a {@link SharedGroupRead}. */
export interface SharedReadMember extends BlockingReader {
  /**
   * The loop is done reading (it stopped): it leaves the read for good. A read it has pending
   * ends with the current round, with what that round got for it (entries read for a loop are
   * always handed to it, to settle or release); resolves once it has its answer.
   */
  leave(): Promise<void>;
}

/** What one shared read needs. */
export interface SharedGroupReadConfig {
  /** A client on a connection of its own: the shared XREADGROUP parks on it. */
  client: StreamsClient;
  group: string;
  consumer: string;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * One blocking `XREADGROUP GROUP g c COUNT n BLOCK ms STREAMS s1 s2 ... > > ...` on behalf of every
 * loop of one group (on one Redis node, or one Cluster slot) that waits for new entries
 * (docs/scale.md "Many handlers").
 * A loop is in the read only while it waits: a loop busy with its entries is not, so a slow handler
 * never holds the others back (its stream is simply not read until it asks again). The read goes
 * out in rounds: each round names the streams of the loops waiting when it starts, reads
 * `COUNT` = the smallest batch they ask for, parks until the nearest loop deadline (at most the
 * smallest `blockMs`), and hands each loop what arrived for its stream. A loop that asks while a
 * round is parked without it wakes the round (CLIENT UNBLOCK) and joins the next. Entries read for
 * a loop always reach that loop's pending read: an interrupted loop gets them at the round's end.
 */
export class SharedGroupRead {
  private readonly client: StreamsClient;
  private readonly group: string;
  private readonly consumer: string;
  private readonly now: () => number;
  private readonly waiting = new Map<string, Waiter>();
  /** The streams of the round on the wire, `null` between rounds. */
  private round: ReadonlySet<string> | null = null;
  /** Streams whose loops left the last round and are expected back (see GATHER_MS). */
  private readonly expected = new Set<string>();
  private gatherUntil = 0;
  private startTimer: NodeJS.Timeout | null = null;
  private startSoon: NodeJS.Immediate | null = null;
  private nudging = false;
  private nudgeMayDrop = false;
  private closed = false;
  /**
   * The loops in this read, by stream (a read of one loop never needs waking for another). A
   * partition loop leaves when its partition moves; its next loop here joins anew.
   */
  private readonly members = new Map<string, SharedReadMember>();

  constructor(config: SharedGroupReadConfig) {
    this.client = config.client;
    this.group = config.group;
    this.consumer = config.consumer;
    this.now = config.now ?? Date.now;
  }

  /**
   * The reader of the loop on `stream`: one loop per stream and group at a time (asked again, the
   * same reader), until it leaves ({@link SharedReadMember.leave}); a later loop of the stream
   * then joins anew. `claimIdleMs`: its reads claim entries idle this long along, in the rounds
   * whose loops all ask the same (one XREADGROUP has one CLAIM).
   */
  member(stream: string, claimIdleMs?: number): SharedReadMember {
    const joined = this.members.get(stream);
    if (joined) return joined;
    let left = false;
    const member: SharedReadMember = {
      read: (count, waitMs, parkMs) =>
        left
          ? Promise.resolve([])
          : this.read(member, stream, { count, waitMs, parkMs, claimIdleMs }),
      interrupt: (mayDrop) => this.interrupt(member, stream, mayDrop),
      leave: () => {
        if (left) return Promise.resolve();
        left = true;
        return this.leave(member, stream);
      },
      onReconnect: (listener) => this.client.onReconnect?.(listener),
      onTopologyChange: (listener) => this.client.onTopologyChange?.(listener),
    };
    this.members.set(stream, member);
    return member;
  }

  /** How many loops are in this read now. */
  get size(): number {
    return this.members.size;
  }

  /** Ends every pending read with no entries and closes the read's connection. */
  async close(): Promise<void> {
    this.closed = true;
    this.clearStart();
    for (const waiter of [...this.waiting.values()]) if (!waiter.inRound) this.finish(waiter, []);
    if (this.round) await this.nudgeRound(true);
    await this.client.close();
  }

  private read(
    member: object,
    stream: string,
    asked: { count: number; waitMs: number; parkMs: number; claimIdleMs: number | undefined },
  ): Promise<RawEntry[]> {
    const { count, waitMs, parkMs, claimIdleMs } = asked;
    if (this.closed) return Promise.resolve([]);
    if (this.waiting.has(stream)) {
      return Promise.reject(
        new Error(`shared read of group '${this.group}': '${stream}' already has a read pending`),
      );
    }
    let waiter: Waiter | undefined;
    const read = new Promise<RawEntry[]>((resolve, reject) => {
      waiter = {
        member,
        stream,
        count,
        parkMs: Math.max(1, parkMs),
        claimIdleMs,
        deadline: this.now() + Math.max(1, waitMs),
        resolve,
        reject,
        inRound: false,
        leaving: false,
      };
    });
    if (waiter) {
      waiter.answered = read.then(
        () => undefined,
        () => undefined,
      );
      this.waiting.set(stream, waiter);
    }
    this.expected.delete(stream);
    if (this.round) void this.nudgeRound(false);
    else this.schedule();
    return read;
  }

  private async interrupt(member: object, stream: string, mayDrop: boolean): Promise<void> {
    const waiter = this.waiting.get(stream);
    if (!waiter || waiter.member !== member) return;
    if (!waiter.inRound) {
      this.waiting.delete(stream);
      waiter.resolve([]);
      return;
    }
    waiter.leaving = true;
    // dropping the connection ends the round of every loop in it: only when all of them leave
    await this.nudgeRound(mayDrop && this.everyoneLeaves());
  }

  /** `member`'s loop stopped: it is no longer in the read; a pending read ends with its round. */
  private async leave(member: object, stream: string): Promise<void> {
    if (this.members.get(stream) === member) this.members.delete(stream);
    const waiter = this.waiting.get(stream);
    if (!waiter || waiter.member !== member) return;
    await this.interrupt(member, stream, false);
    await waiter.answered;
  }

  /** True when every loop of the round on the wire asked to leave it. */
  private everyoneLeaves(): boolean {
    for (const waiter of this.waiting.values()) if (waiter.inRound && !waiter.leaving) return false;
    return true;
  }

  /**
   * Starts the next round now, or once the loops that just left are back (GATHER_MS at most). A
   * read of one loop has no one to gather: its round goes out in the tick the loop asks (beside
   * the loop's XACK), not one event-loop turn later.
   */
  private schedule(): void {
    if (this.round || this.closed || this.waiting.size === 0) return;
    if (this.size <= 1) {
      this.startRound();
      return;
    }
    const gatherLeft = this.expected.size > 0 ? this.gatherUntil - this.now() : 0;
    if (gatherLeft > 0) {
      this.startTimer ??= setTimeout(() => {
        this.startTimer = null;
        this.startRound();
      }, gatherLeft);
      return;
    }
    this.clearStart();
    this.startSoon = setImmediate(() => {
      this.startSoon = null;
      this.startRound();
    });
  }

  private clearStart(): void {
    if (this.startTimer) clearTimeout(this.startTimer);
    if (this.startSoon) clearImmediate(this.startSoon);
    this.startTimer = null;
    this.startSoon = null;
  }

  private startRound(): void {
    this.clearStart();
    if (this.round || this.closed) return;
    this.expected.clear();
    const now = this.now();
    const members: Waiter[] = [];
    for (const waiter of [...this.waiting.values()]) {
      if (waiter.deadline - now > DEADLINE_SLACK_MS) {
        members.push(waiter);
        continue;
      }
      // its deadline passed while the round gathered: it comes back soon, wait for it too
      this.expected.add(waiter.stream);
      this.finish(waiter, []);
    }
    if (this.expected.size > 0) {
      this.gatherUntil = now + GATHER_MS;
      this.schedule();
      return;
    }
    if (members.length === 0) return;
    let count = Infinity;
    let block = Infinity;
    for (const waiter of members) {
      waiter.inRound = true;
      count = Math.min(count, waiter.count);
      block = Math.min(block, waiter.parkMs, waiter.deadline - now);
    }
    const streams = members.map((waiter) => waiter.stream);
    this.round = new Set(streams);
    void this.runRound(members, streams, count, Math.max(1, Math.ceil(block)));
  }

  private async runRound(
    members: Waiter[],
    streams: string[],
    count: number,
    block: number,
  ): Promise<void> {
    let replies: Map<string, RawEntry[]>;
    // a round cut short for one loop's sweep keeps the reply margin of the longest park it serves
    const marginMs = stallMarginMs(Math.max(...members.map((waiter) => waiter.parkMs)));
    try {
      replies = await this.client.readGroups(
        this.group,
        this.consumer,
        count,
        streams,
        block,
        this.size > 1 ? UNINTERRUPTIBLE_PARK_MS : undefined,
        marginMs,
        commonClaim(members),
      );
    } catch (err) {
      replies = await this.attribute(err, members, count);
    }
    this.round = null;
    const now = this.now();
    this.gatherUntil = now + GATHER_MS;
    for (const waiter of members) {
      waiter.inRound = false;
      if (this.waiting.get(waiter.stream) !== waiter) continue; // settled by `attribute`
      const entries = replies.get(waiter.stream) ?? [];
      const due = waiter.deadline - now <= DEADLINE_SLACK_MS;
      if (entries.length === 0 && !due && !waiter.leaving && !this.closed) continue;
      if (!waiter.leaving) this.expected.add(waiter.stream);
      this.finish(waiter, entries);
    }
    this.schedule();
  }

  /**
   * A round failed. A connection failure fails every loop in it (each backs off and reads its own
   * PEL again). A server reply fails only the loops it is about: named in it (`NOGROUP No such
   * key 's' ...`), or found by reading each stream alone (without BLOCK) once; the others get what
   * those reads returned, or wait on in the next round.
   */
  private async attribute(
    err: unknown,
    members: readonly Waiter[],
    count: number,
  ): Promise<Map<string, RawEntry[]>> {
    const got = new Map<string, RawEntry[]>();
    if (!isReplyError(err)) {
      for (const waiter of members) this.fail(waiter, err);
      return got;
    }
    const text = err instanceof Error ? err.message : '';
    const named = members.filter((waiter) => text.includes(`key '${waiter.stream}'`));
    if (named.length === 1) {
      this.fail(named[0], err);
      return got;
    }
    for (const waiter of members) {
      try {
        const alone = await this.client.readGroups(this.group, this.consumer, count, [
          waiter.stream,
        ]);
        const entries = alone.get(waiter.stream);
        if (entries) got.set(waiter.stream, entries);
      } catch (own) {
        this.fail(waiter, own);
        if (!isReplyError(own)) {
          for (const rest of members) this.fail(rest, own);
          break;
        }
      }
    }
    return got;
  }

  private finish(waiter: Waiter, entries: RawEntry[]): void {
    if (this.waiting.get(waiter.stream) === waiter) this.waiting.delete(waiter.stream);
    waiter.resolve(entries);
  }

  private fail(waiter: Waiter, err: unknown): void {
    if (this.waiting.get(waiter.stream) !== waiter) return;
    this.waiting.delete(waiter.stream);
    waiter.reject(err);
  }

  /** Ends the parked round early (CLIENT UNBLOCK, repeated until it is back: `unblock.ts`). */
  private async nudgeRound(mayDrop: boolean): Promise<void> {
    this.nudgeMayDrop ||= mayDrop;
    if (this.nudging) return;
    this.nudging = true;
    const round = this.round;
    try {
      await unblockWhileParked(
        () => round !== null && this.round === round,
        () => this.client.interruptRead(this.nudgeMayDrop),
        NUDGE_TRIES,
        NUDGE_EVERY_MS,
      );
    } finally {
      this.nudging = false;
      this.nudgeMayDrop = false;
    }
  }
}
