export { BalancesHandler } from './balances.handler';
export {
  LedgerBook,
  SHOWN_ACCOUNTS,
  type AccountBalance,
  type LedgerFigures,
  type MovementVerdict,
} from './ledger-book.service';
export { LedgerController } from './ledger.controller';
export { LedgerModule } from './ledger.module';
export {
  LEDGER_PARTITIONS,
  LEDGER_STREAM,
  MAX_STATEMENT,
  movementId,
  movementProblem,
  statementProblem,
  type Movement,
  type Statement,
} from './movement';
