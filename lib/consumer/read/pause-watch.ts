import { errorText } from '../../codec/codecs';
import { isReplyError } from '../../redis/redis-errors';
import type { GroupPauses } from '../../redis/stream-roles';

/** What one loop asks of the pause switch of its group on its stream. */
export interface PauseProbe {
  /** When the flags were last read (`now()` ms; `-Infinity` before the first read). */
  readonly readAt: number;
  /**
   * Whether the loop's group is paused on its stream: the flag read at most `maxAgeMs` ago, else
   * read again (one MGET for every loop of the watch; concurrent asks share it).
   */
  isPaused(maxAgeMs: number): Promise<boolean>;
}

/**
 * The pause flags of the loops of one group name (per hash slot on a Cluster), read in one MGET
 * for all of them (docs/operations.md "Pausing a group"): 100 idle handlers of one group add one
 * command per `claimIntervalMs`, not 100. Every loop of the watch checks at the same instants
 * (`readAt + claimIntervalMs`), so a shared read ends once for all of them.
 */
export class PauseWatch {
  private readonly streams = new Set<string>();
  private flags = new Map<string, boolean>();
  private lastReadAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | null = null;
  private refusedBefore = false;

  /**
   * @param warn told once when the server refuses the read (an ACL without `+mget` on the pause
   *   keys): the loops then run as if not paused, and read again every interval.
   */
  constructor(
    private readonly pauses: Pick<GroupPauses, 'pausedSince'>,
    private readonly group: string,
    private readonly now: () => number = Date.now,
    private readonly warn: (text: string) => void = () => undefined,
  ) {}

  /** The probe of the loop on `stream`. */
  member(stream: string): PauseProbe {
    this.streams.add(stream);
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const watch = this;
    return {
      get readAt() {
        return watch.lastReadAt;
      },
      isPaused: (maxAgeMs) => this.isPaused(stream, maxAgeMs),
    };
  }

  private async isPaused(stream: string, maxAgeMs: number): Promise<boolean> {
    if (this.now() - this.lastReadAt >= maxAgeMs || !this.flags.has(stream)) await this.read();
    return this.flags.get(stream) ?? false;
  }

  private read(): Promise<void> {
    this.reading ??= (async () => {
      const startedAt = this.now();
      const streams = [...this.streams];
      try {
        const since = await this.pauses.pausedSince(
          streams.map((stream) => ({ stream, group: this.group })),
        );
        this.flags = new Map(streams.map((stream, i) => [stream, since[i] !== null]));
        this.lastReadAt = startedAt;
      } catch (err) {
        // a connection failure fails the beat as any command does; a refusal would fail it for
        // good, so the group runs unpaused (an upgrade must not stop loops under an older ACL)
        if (!isReplyError(err)) throw err;
        this.flags = new Map(streams.map((stream) => [stream, false]));
        this.lastReadAt = startedAt;
        if (!this.refusedBefore) {
          this.refusedBefore = true;
          this.warn(
            `Pause flags of group '${this.group}' cannot be read (${errorText(err)}): pauses are ` +
              `ignored by this process until the ACL allows MGET on its pause keys ` +
              `(docs/operations.md "Redis ACL")`,
          );
        }
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }
}

/** A probe for a client with no pause switch (a test fake): never paused. */
export const NEVER_PAUSED: PauseProbe = {
  readAt: Number.POSITIVE_INFINITY,
  isPaused: () => Promise.resolve(false),
};

/** The pause watches of an app's loops with shared reads: one per group name and read partition. */
export class PauseWatchPool {
  private readonly watches = new Map<string, PauseWatch>();

  /**
   * @param pauses the pause switch on the loops' shared commands connection.
   * @param partitionOf the read partition of a stream (`''` on one node, its slot on a Cluster):
   *   one MGET may only name keys of one slot.
   */
  constructor(
    private readonly pauses: Pick<GroupPauses, 'pausedSince'>,
    private readonly partitionOf: (stream: string) => string,
    private readonly warn: (text: string) => void = () => undefined,
  ) {}

  /** The probe of the loop on `stream`/`group`. */
  probe(group: string, stream: string): PauseProbe {
    const key = JSON.stringify([group, this.partitionOf(stream)]);
    let watch = this.watches.get(key);
    if (!watch) {
      watch = new PauseWatch(this.pauses, group, Date.now, this.warn);
      this.watches.set(key, watch);
    }
    return watch.member(stream);
  }
}
