import { errorText } from '../../codec/codecs';
import type { AlongAck, EntryDeletions } from '../../redis/stream-roles';
import type { BesideBeat, LoopContext } from '../context';
import type { AlongAckSource } from './ack-writer';

/**
 * How often (ms) a loop of a `deleteOnAck` handler looks for entries every group acknowledged:
 * an entry goes within 5 s of the last group's acknowledgement when that group does not delete.
 */
export const DELETION_SWEEP_MS = 2000;

/** Entries one look reads at most (one script call). */
const SWEEP_COUNT = 500;

/**
 * `deleteOnAck` (docs/delivery.md "Deleting acknowledged entries"): every XACK of the loop (a
 * handled entry, a dead letter; not an exactly-once commit, which may be refused) removes its
 * entries from the stream in the same round trip, and
 * a sweep beside the beat removes those the last group to acknowledge left (it does not delete),
 * oldest first, from where its last look ended. With `true` the XACK removes its entries whatever
 * other groups hold (XACKDEL KEEPREF); when the sweep finds another group on the stream, a
 * warning says so and the loop deletes only what every group acknowledged from then on.
 */
export class EntryDeletion implements AlongAckSource, BesideBeat {
  private ackedByAll: boolean;
  /** Where the next look starts (after this id); `null`: the oldest entry. */
  private after: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** A look failed and was reported; the next that works says so. */
  private failing = false;

  /**
   * @param mode the handler's `deleteOnAck`.
   * @param deletions the sweep's script; without it (a test fake) the acks alone delete.
   */
  constructor(
    private readonly context: Pick<LoopContext, 'stream' | 'where' | 'logger'>,
    mode: true | 'acked-by-all',
    private readonly deletions?: EntryDeletions,
    private readonly everyMs = DELETION_SWEEP_MS,
  ) {
    this.ackedByAll = mode === 'acked-by-all';
  }

  alongAck(ids: readonly string[]): Extract<AlongAck, { kind: 'deleteEntries' }> {
    return { kind: 'deleteEntries', entryIds: ids, ackedByAll: this.ackedByAll };
  }

  /**
   * Starts the sweep (idempotent): a first look at once (what a stopped process left, and the
   * server's verbs asked before the first XACK), then one every `everyMs`.
   */
  start(): void {
    if (!this.deletions || this.timer !== null) return;
    const look = (): void => {
      this.running ??= this.look().finally(() => (this.running = null));
    };
    this.timer = setInterval(look, this.everyMs);
    this.timer.unref();
    look();
  }

  /** Stops the sweep once its look in flight is done; never throws. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One look: removes what every group acknowledged, up to {@link SWEEP_COUNT} entries. */
  async look(): Promise<void> {
    if (!this.deletions) return;
    const { stream, where, logger } = this.context;
    try {
      const found = await this.deletions.sweep(stream, this.after, SWEEP_COUNT);
      this.after = found.next;
      if (this.failing) logger.log(`${where}: acknowledged entries are deleted again`);
      this.failing = false;
      if (!this.ackedByAll && found.groups > 1) {
        this.ackedByAll = true;
        logger.warn(
          `${where}: deleteOnAck is true but ${stream} now has ${found.groups} groups; ` +
            `entries are deleted once every group acknowledged them ('acked-by-all')`,
        );
      }
    } catch (err) {
      if (!this.failing)
        logger.warn(
          `${where}: acknowledged entries not deleted (${errorText(err)}); trying again in ${this.everyMs} ms`,
        );
      this.failing = true;
    }
  }
}
