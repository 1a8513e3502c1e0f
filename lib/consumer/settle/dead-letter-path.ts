import { boundedText } from '../../codec/bounded-text';
import { brandedIdOf, errorStack, errorText, fieldsToRecord } from '../../codec/codecs';
import { deadLetterFields } from '../../codec/dead-letter-fields';
import { partitionedStreamOf, partitionKeyOf } from '../../codec/partition-key';
import type {
  DeadLetterMessage,
  DeadLetterReason,
} from '../../interfaces/dead-letter-message.interface';
import type { StreamsClient } from '../../redis/stream-roles';
import type { AckWriter } from './ack-writer';
import {
  firstFew,
  NO_LONGER_OURS,
  type ConsumerLogger,
  type DeadLetterSink,
  type DeadLetterCandidate,
  type LoopContext,
  type LoopCounters,
} from '../context';

export type { DeadLetterCandidate } from '../context';

/** Where one loop's dead letters go, with the identity it stamps on them. */
export interface DeadLetterRoute {
  /** The stream the loop reads (and acks on): a partition's stream on a partitioned stream. */
  stream: string;
  group: string;
  consumer: string;
  handlerName: string;
  deadLetterStream: string | false;
  /**
   * The stream its letters name: the partitioned stream's own name for a partition loop (one
   * stream to its users, docs/partitions.md "Dead letters"), else `stream`.
   */
  source: string;
  /** The partition a partition loop reads; absent on a plain stream. */
  partition?: number;
}

/** The entries on the dead-letter path now, and the step they are in. */
export interface DeadLetterInFlight {
  /** The batch being copied (`copy`), or the one entry whose `@DeadLetter` methods run. */
  entryIds: readonly string[];
  step: 'copy' | 'handlers';
}

/**
 * The dead-letter path (docs/dead-letters.md), in its order: (a) copy to the dead-letter stream,
 * (b) call the matching `@DeadLetter` methods, (c) XACK. Without `@DeadLetter` methods a batch's
 * copies go out together (one round trip, in order) and one XACK settles them. A failure in (a)
 * or (b) leaves the entry pending (the next sweep retries it); nothing is acked before its dead
 * letter is safely somewhere. Once the loop stops, no entry starts down the path; each one that
 * completed is acked at once.
 */
export class DeadLetterPath {
  /** Entries copied whose handlers failed: a retry must not copy them twice. */
  private readonly copied = new Set<string>();
  private current: DeadLetterInFlight | undefined;

  private readonly route: DeadLetterRoute;
  private readonly counters: LoopCounters;
  private readonly logger: ConsumerLogger;
  private readonly now: () => number;
  /** True once the loop stops: no entry starts down the path after that. */
  private readonly isStopping: () => boolean;
  /** True once stop() gave up waiting and closed the connection: no method is called after. */
  private readonly isAbandoned: () => boolean;

  constructor(
    context: LoopContext,
    private readonly client: Pick<StreamsClient, 'add' | 'touch'>,
    private readonly sink: DeadLetterSink,
    /** The loop's one XACK writer: a dead letter's XACK and what goes with it. */
    private readonly acks: Pick<AckWriter, 'exited'>,
  ) {
    const { stream, group, consumer, handlerName, options, partition } = context;
    this.route = {
      stream,
      group,
      consumer,
      handlerName,
      deadLetterStream: options.deadLetterStream,
      source: partition ? partitionedStreamOf(stream, partition.index) : stream,
      partition: partition?.index,
    };
    this.counters = context.counters;
    this.logger = context.logger;
    this.now = () => context.now();
    this.isStopping = () => context.isStopping();
    this.isAbandoned = () => context.isAbandoned();
  }

  /** The entries on the path now (being copied, or one in its `@DeadLetter` methods), if any. */
  get inFlight(): DeadLetterInFlight | undefined {
    return this.current;
  }

  /**
   * Sends each candidate down the path until the loop stops (the rest stay pending, untouched);
   * returns the entry ids that were acked.
   */
  async send(
    candidates: readonly DeadLetterCandidate[],
    reason: DeadLetterReason,
  ): Promise<string[]> {
    const done: string[] = [];
    const acks: Array<Promise<void>> = [];
    const ackFailures: unknown[] = [];
    // acked at once, pipelined with what follows: a stop that gives up on a later entry leaves
    // this one settled, so a restart does not dead-letter it a second time (caught here, at
    // once: a rejection must not wait unhandled while a later entry runs)
    const ack = (ids: string[]) =>
      acks.push(this.ack(ids).catch((err: unknown) => void ackFailures.push(err)));
    for (const step of this.steps(candidates.map(bounded))) {
      if (this.isStopping()) break;
      const settled = await this.sendStep(step, reason); // never throws
      if (settled.length === 0) continue;
      ack(settled);
      done.push(...settled);
    }
    await Promise.all(acks);
    if (ackFailures.length > 0) throw ackFailures[0];
    return done;
  }

  /**
   * How the candidates go down the path: all at once when nothing but the copy runs (one round
   * trip for the batch's copies, one XACK); one by one with `@DeadLetter` methods, so a stop
   * leaves at most the entry in its methods copied and not acked.
   */
  private steps(candidates: DeadLetterCandidate[]): DeadLetterCandidate[][] {
    if (candidates.length === 0) return [];
    return this.sink.handlerCount > 0 ? candidates.map((c) => [c]) : [candidates];
  }

  /** (a) and (b) for a step; returns the entries ready for their XACK. Never throws. */
  private async sendStep(
    step: readonly DeadLetterCandidate[],
    reason: DeadLetterReason,
  ): Promise<string[]> {
    const settled: string[] = [];
    for (const candidate of await this.copy(await this.stillOurs(step, reason), reason)) {
      if (this.sink.handlerCount > 0 && !(await this.callHandlers(candidate, reason))) continue;
      if (!this.dropping)
        this.logger.warn(
          `Dead-lettered (${reason}) ${this.where(candidate.entryId)} after ${candidate.attempts} deliveries`,
        );
      settled.push(candidate.entryId);
    }
    return settled;
  }

  /**
   * The fence: the step's entries the group still names this consumer as the owner of, touched
   * (their idle time reset, so no peer's sweep takes them for `minIdleMs`). One that a peer took
   * over while this process did not answer for `minIdleMs` is left to it: its owner dead-letters
   * it, once. Never throws: when the touch fails the step stays pending.
   */
  private async stillOurs(
    step: readonly DeadLetterCandidate[],
    reason: DeadLetterReason,
  ): Promise<DeadLetterCandidate[]> {
    const { stream, group, consumer, handlerName } = this.route;
    const ids = step.map((c) => c.entryId);
    let lost: string[];
    try {
      lost = await this.client.touch(stream, group, consumer, ids);
    } catch (err) {
      this.failed(ids, reason, err);
      return [];
    }
    if (lost.length === 0) return [...step];
    this.logger.warn(
      `Not dead-lettering (${reason}) ${handlerName} ${stream}/${group} entries ` +
        `${firstFew(lost)}: ${NO_LONGER_OURS}`,
    );
    return step.filter((c) => !lost.includes(c.entryId));
  }

  /** No dead-letter stream and no `@DeadLetter` method: an entry is only warned about and acked. */
  private get dropping(): boolean {
    return this.route.deadLetterStream === false && this.sink.handlerCount === 0;
  }

  private async ack(entryIds: string[]): Promise<void> {
    await this.acks.exited(entryIds);
    for (const entryId of entryIds) this.copied.delete(entryId);
    this.counters.deadLettered(entryIds.length);
  }

  /**
   * (a) for the batch: the copies not made yet, sent together (in order, one round trip). Returns
   * the candidates that may go on: copied now or before; all of them with no dead-letter stream.
   * Never throws: a failed copy is logged and its entry stays pending.
   */
  private async copy(
    candidates: readonly DeadLetterCandidate[],
    reason: DeadLetterReason,
  ): Promise<DeadLetterCandidate[]> {
    const { deadLetterStream } = this.route;
    if (deadLetterStream === false) {
      if (this.dropping)
        for (const c of candidates)
          this.logger.warn(
            `Dropping ${reason} entry with no dead-letter stream and no @DeadLetter handler: ` +
              `${this.where(c.entryId)} (id ${brandedIdOf(c.fields) ?? '-'}, attempts ` +
              `${c.attempts}, error ${c.error ?? '-'})`,
          );
      return [...candidates];
    }
    const toCopy = candidates.filter((c) => !this.copied.has(c.entryId));
    if (toCopy.length > 0) {
      this.current = { entryIds: toCopy.map((c) => c.entryId), step: 'copy' };
      const copies = await Promise.allSettled(
        toCopy.map((c) => this.client.add(deadLetterStream, this.copyFields(c, reason))),
      );
      this.current = undefined;
      const failed: string[] = [];
      let failure: unknown;
      copies.forEach((copy, i) => {
        if (copy.status === 'fulfilled') this.copied.add(toCopy[i].entryId);
        else {
          failed.push(toCopy[i].entryId);
          failure ??= copy.reason;
        }
      });
      if (failed.length > 0) this.failed(failed, reason, failure);
    }
    return candidates.filter((c) => this.copied.has(c.entryId));
  }

  /** (b) for one entry; false when it must stay pending (abandoned, or a method threw). */
  private async callHandlers(
    candidate: DeadLetterCandidate,
    reason: DeadLetterReason,
  ): Promise<boolean> {
    if (this.isAbandoned()) return false; // copied; it stays pending, the copy is not undone
    this.current = { entryIds: [candidate.entryId], step: 'handlers' };
    try {
      await this.sink.deliver(this.letter(candidate, reason));
      return true;
    } catch (err) {
      this.failed([candidate.entryId], reason, err);
      return false;
    } finally {
      this.current = undefined;
    }
  }

  private failed(entryIds: readonly string[], reason: DeadLetterReason, err: unknown): void {
    this.counters.errorSeen(errorText(err));
    const { handlerName, stream, group } = this.route;
    const which = entryIds.length === 1 ? `entry ${entryIds[0]}` : `entries ${entryIds.join(', ')}`;
    const them = entryIds.length === 1 ? 'it stays' : 'they stay';
    this.logger.error(
      `Dead-letter path failed for ${handlerName} ${stream}/${group} ${which} (${reason}); ` +
        `${them} pending and ${entryIds.length === 1 ? 'is' : 'are'} retried: ${errorText(err)}`,
      errorStack(err),
    );
  }

  private where(entryId: string): string {
    const { stream, group, handlerName } = this.route;
    return `${handlerName} ${stream}/${group} entry ${entryId}`;
  }

  private copyFields(candidate: DeadLetterCandidate, reason: DeadLetterReason): string[] {
    const { source, group, partition } = this.route;
    return [
      ...candidate.fields,
      ...deadLetterFields({
        reason,
        stream: source,
        group,
        entryId: candidate.entryId,
        attempts: candidate.attempts,
        error: candidate.error,
        at: new Date(this.now()),
        partition,
        key: partition === undefined ? undefined : partitionKeyOf(candidate.fields),
      }),
    ];
  }

  private letter(candidate: DeadLetterCandidate, reason: DeadLetterReason): DeadLetterMessage {
    const { source, group, consumer, partition } = this.route;
    const letter: DeadLetterMessage = {
      reason,
      stream: source,
      group,
      consumer,
      entryId: candidate.entryId,
      id: brandedIdOf(candidate.fields),
      attempts: candidate.attempts,
      fields: fieldsToRecord(candidate.fields),
      error: candidate.error,
    };
    if (partition === undefined) return letter;
    return { ...letter, partition, key: partitionKeyOf(candidate.fields) };
  }
}

/**
 * The candidate with its error text within the dead-letter bound, whoever made the text: what the
 * copy, the `@DeadLetter` methods and the log line get is the same cut (docs/dead-letters.md).
 */
function bounded(candidate: DeadLetterCandidate): DeadLetterCandidate {
  const { error } = candidate;
  return error === undefined ? candidate : { ...candidate, error: boundedText(error) };
}
