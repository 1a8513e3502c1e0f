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
import type {
  ConsumerLogger,
  DeadLetterSink,
  DeadLetterCandidate,
  LoopContext,
  LoopCounters,
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

/** The entry on the dead-letter path now, and the step it is in. */
export interface DeadLetterInFlight {
  entryId: string;
  step: 'copy' | 'handlers';
}

/**
 * The dead-letter path (docs/dead-letters.md), in its order: (a) copy to the dead-letter stream,
 * (b) call the matching `@DeadLetter` methods, (c) XACK. A failure in (a) or (b) leaves the entry
 * pending (the next sweep retries it); nothing is acked before its dead letter is safely
 * somewhere. Once the loop stops, no entry starts down the path; each one that completed is acked
 * at once.
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
    private readonly client: Pick<StreamsClient, 'add'>,
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

  /** The entry on the path now (its copy or its `@DeadLetter` methods running), if any. */
  get inFlight(): DeadLetterInFlight | undefined {
    return this.current;
  }

  /**
   * Sends each candidate down the path, until the loop stops (the rest stay pending, untouched);
   * returns the entry ids that were acked.
   */
  async send(
    candidates: readonly DeadLetterCandidate[],
    reason: DeadLetterReason,
  ): Promise<string[]> {
    const done: string[] = [];
    const acks: Array<Promise<void>> = [];
    const ackFailures: unknown[] = [];
    for (const candidate of candidates) {
      if (this.isStopping()) break;
      const sent = await this.sendOne(bounded(candidate), reason); // never throws
      this.current = undefined;
      if (!sent) continue;
      // acked at once, pipelined with the next entry's copy: a stop that gives up on a later
      // entry leaves this one settled, so a restart does not dead-letter it a second time
      // (caught here, at once: a rejection must not wait unhandled while a later entry runs)
      acks.push(this.ack(candidate.entryId).catch((err: unknown) => void ackFailures.push(err)));
      done.push(candidate.entryId);
    }
    await Promise.all(acks);
    if (ackFailures.length > 0) throw ackFailures[0];
    return done;
  }

  private async ack(entryId: string): Promise<void> {
    await this.acks.exited([entryId]);
    this.copied.delete(entryId);
    this.counters.deadLettered(1);
  }

  private async sendOne(
    candidate: DeadLetterCandidate,
    reason: DeadLetterReason,
  ): Promise<boolean> {
    const { stream, group, handlerName, deadLetterStream } = this.route;
    const where = `${handlerName} ${stream}/${group} entry ${candidate.entryId}`;
    if (deadLetterStream === false && this.sink.handlerCount === 0) {
      this.logger.warn(
        `Dropping ${reason} entry with no dead-letter stream and no @DeadLetter handler: ${where} ` +
          `(id ${brandedIdOf(candidate.fields) ?? '-'}, attempts ${candidate.attempts}, error ${candidate.error ?? '-'})`,
      );
      return true;
    }
    try {
      if (deadLetterStream !== false && !this.copied.has(candidate.entryId)) {
        this.current = { entryId: candidate.entryId, step: 'copy' };
        await this.client.add(deadLetterStream, this.copyFields(candidate, reason));
        this.copied.add(candidate.entryId);
      }
      if (this.sink.handlerCount > 0) {
        if (this.isAbandoned()) return false; // copied; it stays pending, the copy is not undone
        this.current = { entryId: candidate.entryId, step: 'handlers' };
        await this.sink.deliver(this.letter(candidate, reason));
      }
      this.logger.warn(`Dead-lettered (${reason}) ${where} after ${candidate.attempts} deliveries`);
      return true;
    } catch (err) {
      this.counters.errorSeen(errorText(err));
      this.logger.error(
        `Dead-letter path failed for ${where} (${reason}); it stays pending and is retried: ${errorText(err)}`,
        errorStack(err),
      );
      return false;
    }
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
