import { errorText } from '../../codec/codecs';
import type {
  MalformedOutboxItem,
  OutboxItem,
  TransactionOutboxes,
} from '../../redis/stream-roles';
import type { LoopContext } from '../context';

/** How many outbox entries one read takes. */
const OUTBOX_BATCH = 100;

/** What a forwarder needs besides the context. */
export interface OutboxForwarderParts {
  readonly outboxes: TransactionOutboxes;
  /** The outbox key (`outboxKeyOf`): the loop's group on the loop's stream. */
  readonly outbox: string;
  /** The idempotent publish's window (`idempotencyWindowMs`): a repeat within it writes nothing. */
  readonly windowMs: number;
  /**
   * How often an idle forwarder looks (a peer that died between its commit and its forward is
   * covered by the next look of any consumer of the group).
   * @default 1000
   */
  readonly pollMs?: number;
  /**
   * How often it looks while this loop publishes through the outbox (the commit of a publish
   * lands with the loop's next read, so the first look may come before it).
   * @default 50
   */
  readonly busyMs?: number;
  /**
   * How long after the last publish through the outbox the forwarder keeps looking every
   * `busyMs`.
   * @default 2000
   */
  readonly busyForMs?: number;
}

/**
 * Empties a loop's transaction outbox (docs/exactly-once.md "Cluster"): an `exactlyOnce`
 * handler's publishes to streams in other Cluster slots, committed into the outbox in the source's
 * slot, are published to their streams with the idempotent publish (keyed by the output's branded
 * id), oldest first, then deleted from the outbox. Every consumer of the group forwards the same
 * outbox: a repeat (two forwarders at once, a crash between the publish and the XDEL, a failed XDEL)
 * writes nothing, within the idempotency window. A target that cannot be written keeps its entries
 * in the outbox for the next look; nothing is dropped. An entry without the outbox's layout (not
 * written by a commit) is reported once and left where it is.
 */
export class OutboxForwarder {
  private timer: NodeJS.Timeout | null = null;
  private dueAt = Infinity;
  private running: Promise<void> | null = null;
  private stopped = false;
  private lastWrittenAt = -Infinity;
  /** A forward failed and was reported; the next that succeeds says so. */
  private failing = false;
  private readonly reported = new Set<string>();

  constructor(
    private readonly context: Pick<LoopContext, 'where' | 'logger' | 'now'>,
    private readonly parts: OutboxForwarderParts,
  ) {}

  /** Starts looking at the outbox (idempotent). */
  start(): void {
    if (!this.stopped && this.timer === null && this.running === null)
      this.schedule(this.parts.pollMs ?? 1000);
  }

  /** A publish went through the outbox: look soon, and often while they come. */
  written(): void {
    this.lastWrittenAt = this.context.now();
    if (!this.stopped && this.running === null) this.schedule(this.parts.busyMs ?? 50);
  }

  /**
   * Stops looking; what is in the outbox now (this loop's last commits) is forwarded once more, so
   * it does not wait for a peer. Never throws: what stays is forwarded by the group's next look.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    await this.look();
  }

  private schedule(inMs: number): void {
    const at = this.context.now() + inMs;
    if (this.timer !== null) {
      if (at >= this.dueAt) return;
      clearTimeout(this.timer);
    }
    this.dueAt = at;
    this.timer = setTimeout(() => this.fire(), inMs);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = null;
    this.dueAt = Infinity;
    this.running = this.look().finally(() => {
      this.running = null;
      if (this.stopped) return;
      const { busyMs = 50, busyForMs = 2000, pollMs = 1000 } = this.parts;
      const busy = this.context.now() - this.lastWrittenAt < busyForMs;
      this.schedule(busy ? busyMs : pollMs);
    });
  }

  /** Forwards the whole outbox, in reads of {@link OUTBOX_BATCH}; reports a failure once. */
  private async look(): Promise<void> {
    const { where, logger } = this.context;
    try {
      for (let after = '-'; ;) {
        const items = await this.parts.outboxes.read(this.parts.outbox, after, OUTBOX_BATCH);
        if (items.length === 0) break;
        after = items[items.length - 1].outboxId;
        await this.forward(items);
        if (items.length < OUTBOX_BATCH) break;
      }
      if (this.failing) logger.log(`${where}: the outbox ${this.parts.outbox} is forwarded again`);
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        logger.warn(
          `${where}: forwarding the outbox ${this.parts.outbox} failed (${errorText(err)}); its ` +
            `entries stay there and are forwarded at the next look`,
        );
      this.failing = true;
    }
  }

  /** One read of the outbox: each target's entries in one idempotent publish, then the XDEL. */
  private async forward(items: ReadonlyArray<OutboxItem | MalformedOutboxItem>): Promise<void> {
    const { outboxes, outbox, windowMs } = this.parts;
    const byTarget = new Map<string, OutboxItem[]>();
    for (const item of items) {
      if ('malformed' in item) {
        this.reportMalformed(item.outboxId, item.malformed);
        continue;
      }
      const group = byTarget.get(item.target);
      if (group) group.push(item);
      else byTarget.set(item.target, [item]);
    }
    const forwarded: string[] = [];
    const failures: unknown[] = [];
    await Promise.all(
      [...byTarget].map(async ([target, group]) => {
        try {
          await outboxes.forward(target, group, windowMs);
          for (const item of group) forwarded.push(item.outboxId);
        } catch (err) {
          failures.push(err);
        }
      }),
    );
    await outboxes.remove(outbox, forwarded);
    if (failures.length > 0) throw failures[0];
  }

  private reportMalformed(outboxId: string, why: string): void {
    if (this.reported.has(outboxId)) return;
    this.reported.add(outboxId);
    this.context.logger.error(
      `${this.context.where}: outbox entry ${outboxId} of ${this.parts.outbox} is not forwarded: ` +
        `${why} (it was not written by a commit); it stays in the outbox`,
    );
  }
}
