import { BadRequestException, Body, Controller, HttpCode, Post } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { StreamProducer, type PublishReceipt } from '../../lib';
import {
  LEDGER_STREAM,
  movementId,
  movementProblem,
  statementProblem,
  type Movement,
  type Statement,
} from './movement';

/**
 * `POST /ledger/movements {"account":"acct-1","seq":1,"amount":2500}` publishes a movement on the
 * partitioned ledger, keyed by its account (its partition: crc32(account) mod 4); 202 with the
 * receipt. Post one account's movements one after another (each after the previous answered):
 * the order they are written in is the order the balances handler sees them in.
 * `POST /ledger/statements {"account":"acct-1","movements":[{"seq":2,"amount":-250}, ...]}`
 * publishes several movements of one account in one call, in their order; 202 with the receipts.
 */
@Controller('ledger')
export class LedgerController {
  constructor(private readonly producer: StreamProducer) {}

  @Post('movements')
  @HttpCode(202)
  publish(@Body() body: unknown): Promise<PublishReceipt> {
    const problem = movementProblem(body);
    if (problem !== null) throw new BadRequestException(problem);
    const { account, seq, amount } = body as Movement;
    const movement: Movement = { account, seq, amount };
    // A caller that timed out posts the movement again: its id is the same, so the retry writes
    // nothing and answers the first write's receipt (the same entryId).
    return this.producer.publish(LEDGER_STREAM, movement, {
      key: account,
      id: movementId(movement),
      idempotent: true,
      maxLen: 100_000,
    });
  }

  @Post('statements')
  @HttpCode(202)
  publishStatement(@Body() body: unknown): Promise<PublishReceipt[]> {
    const problem = statementProblem(body);
    if (problem !== null) throw new BadRequestException(problem);
    const { account } = body as Statement;
    const movements: Movement[] = (body as Statement).movements.map(({ seq, amount }) => ({
      account,
      seq,
      amount,
    }));
    // one script call writes them in order; a repeated statement writes none of them again
    return this.producer.publishMany(LEDGER_STREAM, movements, {
      key: account,
      ids: movements.map(movementId),
      idempotent: true,
      maxLen: 100_000,
    });
  }
}
