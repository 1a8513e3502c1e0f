import { sleep, type LoopContext } from '../context';
import type { PauseProbe } from './pause-watch';

/** How early a loop may come back and still read the flag (a shared read's own slack). */
const DUE_SLACK_MS = 5;

/**
 * Holds the loop while its group is paused on its stream (docs/operations.md "Pausing a group").
 * The flag is read every `claimIntervalMs` (one MGET shared by the loops of the group name, see
 * `PauseWatch`); while it is set the beat stops before it reads, sweeps or claims anything: the
 * entries in hand have finished (the beat handles a read to its end) and their acks are sent at
 * once (they would go out with the next read), waiting retries keep
 * waiting (the heartbeat keeps them claimed), nothing is released. The state shows `paused`.
 */
export class PauseGate {
  private paused = false;

  constructor(
    private readonly context: Pick<
      LoopContext,
      'where' | 'options' | 'logger' | 'counters' | 'signal' | 'now' | 'isStopping'
    >,
    private readonly ports: {
      probe: PauseProbe;
      /** The acks of what finished (they go out with a read, and a paused loop reads nothing). */
      acks: { flush(): Promise<void> };
    },
  ) {}

  /** When the flag is read next (the same instant for every loop of the group name). */
  get nextAt(): number {
    return this.ports.probe.readAt + this.context.options.claimIntervalMs;
  }

  /**
   * True when the flag is due to be read. A shared read hands a loop back up to a few ms before
   * the instant it asked for; that counts as reached, or the loop would park again for those ms
   * and come back alone.
   */
  due(): boolean {
    return this.context.now() >= this.nextAt - this.slackMs;
  }

  /** {@link DUE_SLACK_MS}, at most a tenth of the interval. */
  private get slackMs(): number {
    return Math.min(DUE_SLACK_MS, Math.floor(this.context.options.claimIntervalMs / 10));
  }

  /** True while the group is paused (as last read). */
  get isPaused(): boolean {
    return this.paused;
  }

  /**
   * Reads the flag when due; while paused, shows `paused` and waits until the next read is due
   * (or the loop stops). True when the beat must stop here.
   */
  async holds(): Promise<boolean> {
    const { context } = this;
    if (this.due()) {
      const paused = await this.ports.probe.isPaused(
        context.options.claimIntervalMs - this.slackMs,
      );
      if (paused !== this.paused) {
        context.logger.log(
          paused
            ? `${context.where}: group paused; no entry is read or started until it is resumed`
            : `${context.where}: group resumed`,
        );
      }
      this.paused = paused;
    }
    if (!this.paused) return false;
    if (context.isStopping()) return true;
    context.counters.setState('paused');
    await this.ports.acks.flush();
    await sleep(Math.max(1, this.nextAt - context.now()), context.signal);
    return true;
  }
}
