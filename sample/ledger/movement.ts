/** The partitioned stream of account movements: `ledger:p:0` ... `ledger:p:3`. */
export const LEDGER_STREAM = 'ledger';

/**
 * Its partition count, declared once for the producer (`producer.partitions` in app.module.ts)
 * and the handler; stored with the stream at first use, so a different count fails loudly.
 */
export const LEDGER_PARTITIONS = 4;

/**
 * One movement of an account, as published on {@link LEDGER_STREAM} keyed by `account`. `seq`
 * is the account's own numbering (1, 2, 3 ...), given by the system that books it: the balances
 * handler checks that each account's movements arrive in that order.
 */
export interface Movement {
  account: string;
  seq: number;
  /** In cents: positive a deposit, negative a payment. */
  amount: number;
}

const ACCOUNT = /^[A-Za-z0-9_-]{1,32}$/;
const MAX_SEQ = 1_000_000_000;
const MAX_AMOUNT = 100_000_000;

/** What is wrong with `value` as a {@link Movement}, or `null` when nothing is. */
export function movementProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'a movement must be a JSON object like {"account":"acct-1","seq":1,"amount":2500}';
  }
  const { account, seq, amount } = value as Record<string, unknown>;
  if (typeof account !== 'string' || !ACCOUNT.test(account)) {
    return 'account must be 1 to 32 letters, digits, _ or -';
  }
  if (!Number.isInteger(seq) || (seq as number) < 1 || (seq as number) > MAX_SEQ) {
    return `seq must be an integer from 1 to ${MAX_SEQ}`;
  }
  if (!Number.isInteger(amount) || Math.abs(amount as number) > MAX_AMOUNT) {
    return `amount must be an integer (cents) from -${MAX_AMOUNT} to ${MAX_AMOUNT}`;
  }
  return null;
}

/**
 * The branded id of a movement: one per (account, seq), so a retried publish of the same
 * movement is the same logical publish (`idempotent: true` writes it once).
 */
export function movementId({ account, seq }: Movement): string {
  return `mv-${account}-${seq}`;
}

/** Movements of one account in one request, in its order (`POST /ledger/statements`). */
export interface Statement {
  account: string;
  movements: Array<Pick<Movement, 'seq' | 'amount'>>;
}

/** At most this many movements in a statement. */
export const MAX_STATEMENT = 100;

/**
 * What is wrong with `value` as a {@link Statement} (its movements numbered one after another),
 * or `null` when nothing is.
 */
export function statementProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'a statement must be a JSON object like {"account":"acct-1","movements":[{"seq":1,"amount":2500}]}';
  }
  const { account, movements } = value as Record<string, unknown>;
  if (!Array.isArray(movements) || movements.length === 0 || movements.length > MAX_STATEMENT) {
    return `movements must be an array of 1 to ${MAX_STATEMENT} movements`;
  }
  for (const [i, m] of movements.entries()) {
    const problem = movementProblem({ ...(m as object), account });
    if (problem !== null) return `movements[${i}]: ${problem}`;
    if (i > 0 && (m as Movement).seq !== (movements[i - 1] as Movement).seq + 1) {
      return `movements[${i}]: seq must follow the one before (${(movements[i - 1] as Movement).seq + 1})`;
    }
  }
  return null;
}
