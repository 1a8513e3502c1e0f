import { errorText } from '../../codec/codecs';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { AckBuffer, AckWatch, AckRecordSource } from '../settle';
import type { AckTurn } from './ack-turn';
import { AwaitingAcks } from './awaiting-acks';
import type { LoopHealth } from '../health';
import { firstFew, type LoopContext } from '../context';

/** What the gate needs of the loop. */
export interface KeyAckGatePorts {
  /** The loop's one AckBuffer: a completed entry joins it; a waiting key makes it send. */
  readonly acks: Pick<AckBuffer, 'add' | 'flush'>;
  /** `dedup` / `newerWins`: the records of a completed entry, written with its XACK. */
  readonly records?: Pick<AckRecordSource, 'handled'>;
  /**
   * When the XACK leaves: the coming event-loop turn, shared with the other loops on the same
   * connection (their XACKs in one write).
   */
  readonly turn: Pick<AckTurn, 'request'>;
  /** After a failed XACK: the own PEL is read again before anything else starts. */
  readonly health: Pick<LoopHealth, 'drainNeeded'>;
  /**
   * Ends the loop's parked read when it parks on the connection the XACK goes out on (it would be
   * answered after the read); absent: the read parks elsewhere.
   */
  readonly wakeRead?: () => void;
}

/**
 * "A replay never goes back" (docs/partitions.md "Order"): in keyed lanes (partitions,
 * `newerWins`) the next entry of a key starts only once the server acknowledged the entries of
 * that key that completed before it (the XACK's reply received), so a crash replays at most the
 * entry a key had in hand, never one after a later entry of its key completed.
 *
 * A completed entry joins the loop's AckBuffer at once. A key whose next entry waits makes the
 * buffer send (one XACK at a time from here: whatever completes while it is on the wire goes out in
 * the next one, so many keys share a round trip); a key with nothing behind it rides with the
 * next read, as any ack. An XACK that fails (whoever sent it) blocks every start until the own PEL
 * is read again ({@link reopen}): the entries that could not start stay pending there in stream
 * order, and the loop's drain, once its acks went through, runs them first.
 */
export class KeyAckGate implements AckWatch {
  /** Per key, how many of its completed entries wait for their XACK reply (a count, no set). */
  private readonly open = new Map<string, number>();
  /** The entries counted in {@link open}, in the order they joined the buffer, with their keys. */
  private readonly awaiting = new AwaitingAcks();
  /**
   * The next XACK reply (`true`) or the failure that blocked the starts (`false`): one promise
   * shared by every key waiting, not one per key.
   */
  private wave: {
    readonly promise: Promise<boolean>;
    readonly resolve: (go: boolean) => void;
  } | null = null;
  /** {@link takeFailure}s waiting for the XACK on the wire to be answered (or to fail). */
  private answerWaiters: Array<() => void> = [];
  private sending = false;
  private sendAgain = false;
  private isBlocked = false;
  /** The failure of an XACK this gate sent, for the run it held back to report (once). */
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly context: Pick<LoopContext, 'where' | 'logger'>,
    private readonly ports: KeyAckGatePorts,
  ) {}

  /** True from a failed XACK until the own PEL drain begins: no entry may start. */
  get blocked(): boolean {
    return this.isBlocked;
  }

  /** Keys with a completed entry whose acknowledgement is not in yet. */
  get waitingKeys(): number {
    return this.open.size;
  }

  /**
   * `message` completed: its ack (with its skip records) joins the buffer, and `key`'s next entry
   * waits for it. An entry without a key waits for nothing.
   */
  completed(message: StreamMessage<unknown>, key: string | undefined): void {
    const { entryId } = message;
    this.ports.records?.handled([message], [entryId]);
    this.ports.acks.add([entryId]);
    if (key === undefined) return;
    this.open.set(key, (this.open.get(key) ?? 0) + 1);
    this.awaiting.push(entryId, key);
  }

  /** True while `key` has a completed entry whose acknowledgement is not in yet. */
  isOpen(key: string): boolean {
    return this.open.has(key);
  }

  /**
   * The next XACK reply: `true` once it is in (an XACK is sent for the waiting acks now, or they
   * ride with one on the wire), `false` when starts are {@link blocked}. Every key waiting shares
   * it (a read's lanes wait in waves, not each with a promise of its own); a key whose ack was not
   * in that reply (it completed while the XACK was on the wire) waits for the next.
   */
  nextAck(): Promise<boolean> {
    if (this.isBlocked) return Promise.resolve(false);
    let wave = this.wave;
    if (wave === null) {
      let resolve: (go: boolean) => void = () => undefined;
      const promise = new Promise<boolean>((settle) => (resolve = settle));
      wave = this.wave = { promise, resolve };
    }
    this.send();
    return wave.promise;
  }

  /** An XACK's reply is in: keys with nothing left open may start their next entry. */
  acked(ids: readonly string[]): void {
    this.awaiting.release(ids, (key) => {
      const open = this.open.get(key);
      if (open === undefined) return;
      if (open > 1) this.open.set(key, open - 1);
      else this.open.delete(key);
    });
    this.endWave(true);
  }

  /**
   * An XACK failed: its entries are not acknowledged, so nothing starts until the own PEL was
   * read again (the entries that wait stay pending there, in order; the loop's backoff and drain
   * take it from here).
   */
  failed(ids: readonly string[], error: unknown): void {
    if (!this.isBlocked) {
      this.isBlocked = true;
      this.ports.health.drainNeeded();
      const { where, logger } = this.context;
      logger.warn(
        `${where}: entries ${firstFew(ids)} were not acknowledged (${errorText(error)}); the ` +
          `later entries of their keys stay pending and nothing starts until the own pending ` +
          `entries are read again`,
      );
    }
    this.endWave(false);
  }

  /** The own PEL drain begins (its acks went through): entries may start again, from there. */
  reopen(): void {
    this.isBlocked = false;
  }

  /**
   * The failure of an XACK this gate sent, once (the loop backs off with it), once the last XACK
   * it sent was answered (a lane held back by its failure may learn of it before this gate does).
   */
  async takeFailure(): Promise<{ error: unknown } | null> {
    if (this.sending) await new Promise<void>((answered) => this.answerWaiters.push(answered));
    const failure = this.failure;
    this.failure = null;
    return failure;
  }

  private endWave(go: boolean): void {
    const wave = this.wave;
    if (wave === null) return;
    this.wave = null;
    wave.resolve(go);
  }

  /**
   * One XACK at a time from here: a key that asks while one is on the wire goes in the next. It
   * leaves in the coming turn of the event loop ({@link AckTurn}), once the handlers that finish
   * in this one did (a read of quick handlers completes many keys at once): one XACK for all of
   * them, not one for the first, in one write with the other loops' XACKs of that turn.
   */
  private send(): void {
    if (this.sending) {
      this.sendAgain = true;
      return;
    }
    this.sending = true;
    this.sendAgain = false;
    this.ports.turn.request(() => {
      // a held key's lane runs beside the beat, which may be parked on the same connection
      this.ports.wakeRead?.();
      this.ports.acks.flush().then(
        () => this.sent(),
        (err: unknown) => {
          // failed() already blocked the starts and ended the wave
          this.failure ??= { error: err };
          this.sent();
        },
      );
    });
  }

  /** The XACK on the wire was answered (or failed): the next may go, its waiters learn of it. */
  private sent(): void {
    this.sending = false;
    const waiters = this.answerWaiters;
    this.answerWaiters = [];
    if (this.sendAgain && this.wave !== null && !this.isBlocked) this.send();
    for (const answered of waiters) answered();
  }
}
