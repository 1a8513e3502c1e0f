import { Module } from '@nestjs/common';
import { BalancesHandler } from './balances.handler';
import { LedgerBook } from './ledger-book.service';
import { LedgerController } from './ledger.controller';

/** The partitioned ledger: publishing movements, the balances handler and its book. */
@Module({
  controllers: [LedgerController],
  providers: [LedgerBook, BalancesHandler],
  exports: [LedgerBook],
})
export class LedgerModule {}
