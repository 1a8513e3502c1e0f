import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { NonRetryableError, StreamHandler, type StreamMessage } from '../../lib';
import { LedgerBook } from './ledger-book.service';
import { LEDGER_PARTITIONS, LEDGER_STREAM, movementProblem, type Movement } from './movement';

/**
 * Balances: applies each account's movements to the book, in the account's order. The ledger is
 * partitioned by account, so every instance of the app shares its 4 partitions (leases) and the
 * movements of one account run one at a time and in stream order, whichever instance owns the
 * partition, while other accounts run beside them (`concurrency`). The book checks each number:
 * a movement out of order is counted as a violation (the page shows it: it stays 0), one applied
 * already (redelivered after a crash) is ignored.
 */

/**
 * A real handler awaits something before it writes (a fraud check, its database): up to this
 * long here, at random. Without per-account order, a movement would then overtake the previous
 * one of its account now and then; the partitions keep them one at a time.
 */
const CHECK_MS = 20;
@Injectable()
export class BalancesHandler {
  private readonly logger = new Logger(BalancesHandler.name);

  constructor(private readonly book: LedgerBook) {}

  @StreamHandler(LEDGER_STREAM, 'balances', {
    partitions: LEDGER_PARTITIONS,
    concurrency: 4,
    blockMs: 2000,
    maxDeliveries: 5,
    retry: { type: 'exponential', initialMs: 200, factor: 2, maxMs: 2000 },
  })
  async apply(message: StreamMessage<Movement>): Promise<void> {
    const where = `${message.stream}/${message.group} entry ${message.entryId}`;
    const problem = movementProblem(message.payload);
    // a foreign producer's mistake: retrying will not fix it (dead-lettered as non_retryable)
    if (problem !== null) throw new NonRetryableError(`${where}: ${problem}`);
    const { account, seq, amount } = message.payload;
    await sleep(Math.random() * CHECK_MS);
    const { verdict, last } = await this.book.apply(message.payload);
    if (verdict === 'out_of_order') {
      this.logger.error(
        `ORDER VIOLATION: ${where} is movement ${seq} of ${account}, but the last one applied is ` +
          `${last} (partition ${message.partition}, lease generation ${message.leaseGeneration})`,
      );
    } else if (verdict === 'replay') {
      this.logger.warn(
        `${where}: movement ${seq} of ${account} was applied already (last ${last}): ignored`,
      );
    } else {
      this.logger.debug(`${where}: applied movement ${seq} of ${account} (${amount} cents)`);
    }
  }
}
