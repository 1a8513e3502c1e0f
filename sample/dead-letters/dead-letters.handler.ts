import { Injectable, Logger } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { DeadLetter, type DeadLetterMessage } from '../../lib';

/** A dead letter as the sample keeps it for the orders page (`GET /stats`). */
export interface RecentDeadLetter {
  reason: DeadLetterMessage['reason'];
  stream: string;
  group: string;
  entryId: string;
  id: string | null;
  attempts: number;
  error: string | null;
  at: string;
}

const KEPT = 20;

/**
 * Receives the dead letters of every stream of the app (every group): undecodable entries, poison
 * pills, orders the billing handler's ValidationPipe rejected, movements the balances handler
 * refused. They are also copied to the stream's `:dlq` stream (`orders:dlq`), where
 * `EchoStreamAdmin.redrive()` can re-publish them once fixed. Logs each one and keeps the last
 * 20 for the page.
 */
@Injectable()
export class DeadLettersHandler {
  private readonly logger = new Logger(DeadLettersHandler.name);
  private readonly recent: RecentDeadLetter[] = [];
  /** Dead letters received by this process. */
  total = 0;

  @DeadLetter()
  onDead(letter: DeadLetterMessage): void {
    this.total++;
    this.recent.unshift({
      reason: letter.reason,
      stream: letter.stream,
      group: letter.group,
      entryId: letter.entryId,
      id: letter.id ?? null,
      attempts: letter.attempts,
      error: letter.error ?? null,
      at: new Date().toISOString(),
    });
    this.recent.length = Math.min(this.recent.length, KEPT);
    this.logger.warn(
      `dead letter (${letter.reason}) ${letter.stream}/${letter.group} entry ${letter.entryId}` +
        ` id ${letter.id ?? '-'} after ${letter.attempts} deliveries: ${letter.error ?? 'no error text'}`,
    );
  }

  /** The most recent dead letters, newest first. */
  list(): RecentDeadLetter[] {
    return [...this.recent];
  }
}
