import { errorText } from '../../codec/codecs';
import { isNoGroupError, isWrongTypeError } from '../../redis/redis-errors';
import type { StreamsClient } from '../../redis/stream-roles';
import { BACKOFF_INITIAL_MS, backoffDelay, sleep, type LoopContext } from '../context';

/**
 * The loop's health, in one place: whether its group is known to exist, whether its own PEL must
 * be read again (a reply lost on a dropped link may have delivered entries to it), and the backoff
 * streak of failed beats with the state it shows (`running`, `degraded`).
 */
export class LoopHealth {
  private groupKnown = false;
  /**
   * Drains of the own PEL asked for (the first beat drains), and the last one asked for that a
   * drain covered: a drain asked while one runs (an entry of it left pending again) is still due
   * after it.
   */
  private drainsAsked = 1;
  private drainsCovered = 0;
  private streak = 0;
  /** Aborted when the connection comes back, so a long backoff does not outlast an outage. */
  private backoffWake: AbortController | null = null;

  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'where' | 'options' | 'logger' | 'counters' | 'signal' | 'isStopping'
    >,
    private readonly client: Pick<StreamsClient, 'createGroup'>,
  ) {}

  /** True when the own PEL must be read (again) before anything else. */
  get needsDrain(): boolean {
    return this.drainsCovered < this.drainsAsked;
  }

  /** The drains asked for so far: what a drain that begins now covers (see {@link drained}). */
  get drainAsked(): number {
    return this.drainsAsked;
  }

  /** True when a beat must prepare (create the group, drain the own PEL) before it reads. */
  get mustPrepare(): boolean {
    return !this.groupKnown || this.needsDrain;
  }

  /** True while failed beats are being retried (the streak is not over). */
  get recovering(): boolean {
    return this.streak > 0;
  }

  /** True when the group is not known to exist (at start, after `NOGROUP`). */
  get needsGroup(): boolean {
    return !this.groupKnown;
  }

  /** Creates the group (`XGROUP CREATE ... MKSTREAM`; an existing one is left as it is). */
  async createGroup(): Promise<void> {
    const { stream, group, options, logger } = this.context;
    const created = await this.client.createGroup(stream, group, options.startId);
    this.groupKnown = true;
    if (created) logger.log(`Created group ${stream}/${group} at ${options.startId}`);
  }

  /** Entries may sit unsettled in the own PEL: the next beat reads it again. */
  drainNeeded(): void {
    this.drainsAsked++;
  }

  /** The own PEL was read to its end, by a drain that began when {@link drainAsked} was `asked`. */
  drained(asked: number): void {
    this.drainsCovered = Math.max(this.drainsCovered, asked);
  }

  /**
   * Before the read: `running` when Redis answered a step of this beat, or nothing failed before.
   * The streak itself ends only once a read and its XACK went through ({@link healthy}): a read
   * or an XACK that keeps failing must back off 100, 200, 400 ms..., not retry every 100 ms.
   */
  beforeRead(answered: boolean): void {
    if (answered || this.streak === 0) this.context.counters.setState('running');
  }

  /** The read and its XACK went through: the backoff streak starts over, the loop is running. */
  healthy(): void {
    if (this.streak > 0) {
      this.context.logger.log(
        `${this.context.where}: recovered after ${this.streak} failed attempts`,
      );
      this.streak = 0;
    }
    if (!this.context.isStopping()) this.context.counters.setState('running');
  }

  /** A beat failed: records it and waits the backoff (cut short by a stop or a reconnect). */
  async backOff(err: unknown): Promise<void> {
    const delay = this.degrade(err);
    this.backoffWake = new AbortController();
    await sleep(delay, AbortSignal.any([this.context.signal, this.backoffWake.signal]));
    this.backoffWake = null;
  }

  /** The connection is back: a backoff in progress ends now. */
  wake(): void {
    this.backoffWake?.abort();
  }

  /**
   * The Cluster's slot map changed (a replica took over, a slot moved): what failed may work
   * now. The backoff in progress ends and the streak starts over, so a beat that fails again
   * waits 100 ms, not the doubled delay of the outage before.
   */
  topologyChanged(): void {
    if (this.streak === 0) return;
    this.context.logger.log(
      `${this.context.where}: the Redis Cluster's slot map changed; retrying now ` +
        `(after ${this.streak} failed attempts)`,
    );
    this.streak = 0;
    this.wake();
  }

  /** Records a Redis error; returns how long to back off. */
  private degrade(err: unknown): number {
    const { counters, logger, where, stream } = this.context;
    const text = errorText(err);
    counters.setState('degraded');
    counters.errorSeen(text);
    if (isNoGroupError(err)) {
      // Redis answered, and the next beat re-creates the group: no reason to wait long (and the
      // streak is left as it is, so a failing re-create still backs off as far as before).
      const delay = BACKOFF_INITIAL_MS;
      this.groupKnown = false;
      this.drainsAsked++;
      logger.warn(`${where}: group or stream is gone (${text}); re-creating it in ${delay} ms`);
      return delay;
    }
    this.streak++;
    const delay = backoffDelay(this.streak);
    if (isWrongTypeError(err)) {
      logger.error(
        `${where}: key '${stream}' holds a value that is not a stream (${text}); ` +
          `it is left untouched; retrying in ${delay} ms`,
      );
    } else {
      logger.error(`${where}: Redis error (${text}); retrying in ${delay} ms`);
    }
    return delay;
  }
}
