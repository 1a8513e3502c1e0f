import type { RawEntry, StreamsClient } from '../../redis/stream-roles';
import type { Heartbeat, LoopHealth } from '../health';
import type { LoopContext } from '../context';
import type { Settlement } from '../settle';
import { readClaimIdleMs, readCounts } from './read-claim';

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
}

/**
 * Read-ahead: after a FULL read (a backlog), the next XREADGROUP (without BLOCK) goes out before
 * the batch is handled, so Redis serves it while the handler runs. Once its reply is in, its
 * entries are kept claimed by the heartbeat and released to peers at stop.
 */
export class ReadAhead {
  private next: Promise<RawEntry[]> | null = null;

  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'consumer' | 'options' | 'partition'
    >,
    private readonly parts: ReadAheadParts,
  ) {}

  /** True while a read sent ahead waits to be taken. */
  get inFlight(): boolean {
    return this.next !== null;
  }

  /** Sends the next read now; no BLOCK, so it never parks the connection ahead of the XACK. */
  start(): void {
    const { client, heartbeat, health } = this.parts;
    const { stream, group, consumer, options } = this.context;
    const { batchSize } = options;
    const claim = readClaimIdleMs(this.context);
    const next = client.readGroup(
      stream,
      group,
      consumer,
      batchSize,
      '>',
      undefined,
      undefined,
      claim,
    );
    this.next = next;
    next.then(
      (entries) => {
        if (entries.length === 0) return;
        this.parts.landed?.(entries);
        if (this.next !== next) return;
        const ids = entries.map((e) => e.entryId);
        heartbeat.hold('readAhead', () => ids);
      },
      () => {
        // a reply lost on a dropped link may have delivered entries to us: read the own PEL again
        health.drainNeeded();
      },
    );
  }

  /** The read sent ahead (`[]` when none): the caller settles its entries from now on. */
  take(): Promise<RawEntry[]> {
    const next = this.next ?? Promise.resolve([]);
    this.next = null;
    this.parts.heartbeat.drop('readAhead');
    return next;
  }

  /** Like {@link take}, `[]` when the read failed (a stop settling what it can). */
  async takeQuietly(): Promise<RawEntry[]> {
    return this.next ? this.take().catch(() => []) : [];
  }

  /** At stop: entries read ahead were never started; peers take them over at once. */
  async release(): Promise<void> {
    if (!this.next) return;
    const entries = await this.take().catch(() => []);
    await this.parts.settlement.release(
      entries.map((e) => e.entryId),
      readCounts(entries), // those claimed along go back with the count they had
      'read-ahead',
    );
  }
}
