import type { LoopCommands } from '../../redis/stream-roles';

/**
 * One event-loop turn for the XACKs that keyed lanes wait for (docs/partitions.md "Order"),
 * shared by the loops on one commands connection (the partition loops of a handler): every send
 * asked for until the turn comes runs then, in the order asked, inside one
 * {@link LoopCommands.together}, so the XACKs of all those loops leave in one socket write instead
 * of one write per loop. The turn is the next check phase (`setImmediate`): the handlers that
 * finish in this turn of the event loop complete their keys first, and join the same XACK.
 */
export class AckTurn {
  private queued: Array<() => void> = [];
  private scheduled = false;

  /** @param link where the sends' commands go; without `together` (a test fake) they just run. */
  constructor(private readonly link: Pick<LoopCommands, 'together'>) {}

  /**
   * Runs `send` in the coming turn, with every other send asked for until then. `send` must not
   * throw: it only starts its commands (a failure is its promise's).
   */
  request(send: () => void): void {
    this.queued.push(send);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.run());
  }

  private run(): void {
    this.scheduled = false;
    const sends = this.queued;
    this.queued = [];
    const all = (): void => {
      for (const send of sends) send();
    };
    if (this.link.together) this.link.together(all);
    else all();
  }
}
