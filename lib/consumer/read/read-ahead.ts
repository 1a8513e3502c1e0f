import type { RawEntry, StreamsClient } from '../../redis/stream-roles';
import type { Heartbeat, LoopHealth } from '../health';
import type { LoopContext } from '../context';
import type { Settlement } from '../settle';
import { readClaimIdleMs, readCounts } from './read-claim';

/**
 * How many reads a loop with a skip look-up (`dedup`, `newerWins`) keeps sent ahead: the look-up
 * of a read goes out as its reply is read, which for handlers that never yield is only between
 * batches; with two ahead, the look-up of the second is answered while the first is handled
 * (docs/delivery.md "Duplicates and stale replays").
 */
export const LOOK_UP_READS_AHEAD = 2;

/** What reading ahead needs besides the context. */
export interface ReadAheadParts {
  readonly client: Pick<StreamsClient, 'readGroup'>;
  readonly heartbeat: Pick<Heartbeat, 'hold' | 'drop'>;
  readonly health: Pick<LoopHealth, 'drainNeeded'>;
  readonly settlement: Pick<Settlement, 'release'>;
  /**
   * Told the moment a read's entries land, taken or not (`Delivery.prepare`: with `dedup` /
   * `newerWins` they are sorted and their records looked up then); absent: nobody.
   */
  readonly landed?: (entries: readonly RawEntry[]) => void;
  /** How many reads may be sent ahead at once (default 1; {@link LOOK_UP_READS_AHEAD}). */
  readonly depth?: number;
}

/** A read sent ahead: its reply, and once it landed, its entry ids and when. */
interface SentRead {
  readonly reply: Promise<RawEntry[]>;
  ids: readonly string[];
  landedAt: number;
}

/**
 * Read-ahead: after a FULL read (a backlog), the next XREADGROUP (without BLOCK) goes out before
 * the batch is handled, so Redis serves it while the handler runs; up to `depth` reads are kept
 * in flight, taken in the order they were sent. Once their replies are in, their entries are kept
 * claimed by the heartbeat and released to peers at stop.
 */
export class ReadAhead {
  private readonly sent: SentRead[] = [];
  private readonly depth: number;

  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'consumer' | 'options' | 'partition' | 'now'
    >,
    private readonly parts: ReadAheadParts,
  ) {
    this.depth = Math.max(1, parts.depth ?? 1);
  }

  /** True while a read sent ahead waits to be taken. */
  get inFlight(): boolean {
    return this.sent.length > 0;
  }

  /** Sends reads until `depth` are in flight (no BLOCK: none parks the connection before acks). */
  fill(): void {
    while (this.sent.length < this.depth) this.start();
  }

  private start(): void {
    const { client, health } = this.parts;
    const { stream, group, consumer, options } = this.context;
    const claim = readClaimIdleMs(this.context);
    const reply = client.readGroup(
      stream,
      group,
      consumer,
      options.batchSize,
      '>',
      undefined,
      undefined,
      claim,
    );
    const read: SentRead = { reply, ids: [], landedAt: 0 };
    this.sent.push(read);
    reply.then(
      (entries) => {
        if (entries.length === 0) return;
        this.parts.landed?.(entries);
        if (!this.sent.includes(read)) return; // taken already: the caller holds them
        read.ids = entries.map((e) => e.entryId);
        read.landedAt = this.context.now();
        this.hold();
      },
      () => {
        // a reply lost on a dropped link may have delivered entries to us: read the own PEL again
        health.drainNeeded();
      },
    );
  }

  /** Keeps the entries of every landed read claimed, as claimed when the oldest landed. */
  private hold(): void {
    const landed = this.sent.filter((read) => read.ids.length > 0);
    if (landed.length === 0) {
      this.parts.heartbeat.drop('readAhead');
      return;
    }
    const ids = landed.length === 1 ? landed[0].ids : landed.flatMap((read) => read.ids);
    // the oldest landing is when they were claimed, as far as the heartbeat must assume
    this.parts.heartbeat.hold('readAhead', () => ids, landed[0].landedAt);
  }

  /** The oldest read sent ahead (`[]` when none): the caller settles its entries from now on. */
  take(): Promise<RawEntry[]> {
    const read = this.sent.shift();
    this.hold();
    return read?.reply ?? Promise.resolve([]);
  }

  /** Every read sent ahead, taken: their entries in read order, none of a read that failed. */
  async takeQuietly(): Promise<RawEntry[]> {
    const entries: RawEntry[] = [];
    while (this.inFlight) entries.push(...(await this.take().catch(() => [])));
    return entries;
  }

  /** At stop: entries read ahead were never started; peers take them over at once. */
  async release(): Promise<void> {
    while (this.inFlight) {
      const entries = await this.take().catch(() => []);
      if (entries.length === 0) continue;
      await this.parts.settlement.release(
        entries.map((e) => e.entryId),
        readCounts(entries), // those claimed along go back with the count they had
        'read-ahead',
      );
    }
  }
}
