import { brandedIdOf, errorStack, errorText, fieldsToRecord } from '../codec/codecs';
import type {
  DeadLetterMessage,
  DeadLetterReason,
} from '../interfaces/dead-letter-message.interface';
import type { StreamsClient } from '../redis/streams-client';
import type { ConsumerCounters } from './consumer-counters';
import type { ConsumerLogger, DeadLetterSink } from './consumer.types';

/** An entry on its way out of the hot path. */
export interface DeadLetterCandidate {
  entryId: string;
  fields: readonly string[];
  attempts: number;
  /** Decode error text, or the last handler error seen for the entry. */
  error: string | undefined;
}

/** Where one loop's dead letters go, with the identity it stamps on them. */
export interface DeadLetterRoute {
  stream: string;
  group: string;
  consumer: string;
  handlerName: string;
  deadLetterStream: string | false;
}

/**
 * The dead-letter path of SPEC §4, in its order: (a) copy to the dead-letter stream, (b) call the
 * matching `@DeadLetter` methods, (c) XACK. A failure in (a) or (b) leaves the entry pending (the
 * next sweep retries it); nothing is acked before its dead letter is safely somewhere.
 */
export class DeadLetterPath {
  /** Entries copied whose handlers failed: a retry must not copy them twice. */
  private readonly copied = new Set<string>();

  constructor(
    private readonly route: DeadLetterRoute,
    private readonly client: StreamsClient,
    private readonly sink: DeadLetterSink,
    private readonly counters: ConsumerCounters,
    private readonly logger: ConsumerLogger,
    private readonly now: () => number,
  ) {}

  /** Sends each candidate down the path; returns the entry ids that were acked. */
  async send(
    candidates: readonly DeadLetterCandidate[],
    reason: DeadLetterReason,
  ): Promise<string[]> {
    const done: string[] = [];
    for (const candidate of candidates) {
      if (await this.sendOne(candidate, reason)) done.push(candidate.entryId);
    }
    if (done.length > 0) {
      await this.client.ack(this.route.stream, this.route.group, done);
      for (const id of done) this.copied.delete(id);
      this.counters.totalDlq += done.length;
    }
    return done;
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
        await this.client.add(deadLetterStream, this.copyFields(candidate, reason));
        this.copied.add(candidate.entryId);
      }
      if (this.sink.handlerCount > 0) await this.sink.deliver(this.letter(candidate, reason));
      this.logger.warn(`Dead-lettered (${reason}) ${where} after ${candidate.attempts} deliveries`);
      return true;
    } catch (err) {
      this.counters.lastError = errorText(err);
      this.logger.error(
        `Dead-letter path failed for ${where} (${reason}); it stays pending and is retried: ${errorText(err)}`,
        errorStack(err),
      );
      return false;
    }
  }

  private copyFields(candidate: DeadLetterCandidate, reason: DeadLetterReason): string[] {
    const { stream, group } = this.route;
    return [
      ...candidate.fields,
      'dlq_reason',
      reason,
      'dlq_stream',
      stream,
      'dlq_group',
      group,
      'dlq_entry_id',
      candidate.entryId,
      'dlq_attempts',
      String(candidate.attempts),
      'dlq_error',
      candidate.error ?? '',
      'dlq_at',
      new Date(this.now()).toISOString(),
    ];
  }

  private letter(candidate: DeadLetterCandidate, reason: DeadLetterReason): DeadLetterMessage {
    return {
      reason,
      stream: this.route.stream,
      group: this.route.group,
      consumer: this.route.consumer,
      entryId: candidate.entryId,
      id: brandedIdOf(candidate.fields),
      attempts: candidate.attempts,
      fields: fieldsToRecord(candidate.fields),
      error: candidate.error,
    };
  }
}
