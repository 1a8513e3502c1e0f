import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { SampleConfig } from '../config';
import type { Movement } from './movement';

/** What {@link LedgerBook.apply} did with a movement. */
export type MovementVerdict =
  /** The account's next movement: applied. */
  | 'applied'
  /** Applied already (a redelivery after a crash or a hand-over): ignored. */
  | 'replay'
  /** Its predecessor was not applied yet: an order violation, counted, then applied. */
  | 'out_of_order';

/** One account as the book holds it. */
export interface AccountBalance {
  account: string;
  /** The `seq` of the last movement applied. */
  seq: number;
  /** In cents. */
  balance: number;
}

/** The book's figures, shared by every instance of the app. */
export interface LedgerFigures {
  applied: number;
  replays: number;
  violations: number;
  /** How many accounts the book holds. */
  accounts: number;
  /** The first {@link SHOWN_ACCOUNTS} accounts by name. */
  balances: AccountBalance[];
}

/** At most this many accounts are read for the page (the book itself has no bound). */
export const SHOWN_ACCOUNTS = 50;

// One hash tag: the script's keys share a hash slot, so it also runs on a Redis Cluster.
const SEQ_KEY = '{sample-ledger}:seq';
const BALANCES_KEY = '{sample-ledger}:balances';
const FIGURES_KEY = '{sample-ledger}:figures';

/**
 * Checks a movement's number against the account's last one and applies it, in one atomic step
 * on the server: two deliveries of one movement (or an instance that outlived its lease) cannot
 * both apply it, so the sequence check is also the fence the partitions' docs ask for.
 */
const APPLY_MOVEMENT = `
local last = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local seq = tonumber(ARGV[2])
if seq <= last then
  redis.call('HINCRBY', KEYS[3], 'replays', 1)
  return {'replay', last}
end
local verdict = 'applied'
if seq ~= last + 1 then
  redis.call('HINCRBY', KEYS[3], 'violations', 1)
  verdict = 'out_of_order'
end
redis.call('HSET', KEYS[1], ARGV[1], seq)
redis.call('HINCRBY', KEYS[2], ARGV[1], ARGV[3])
redis.call('HINCRBY', KEYS[3], 'applied', 1)
return {verdict, last}`;

/** acct-2 before acct-10. */
const byName = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });

type BookClient = Redis & {
  applyMovement(
    seqKey: string,
    balancesKey: string,
    figuresKey: string,
    account: string,
    seq: number,
    amount: number,
  ): Promise<[MovementVerdict, number]>;
};

/**
 * The accounts' balances and the number of each one's last movement: the sample's "database",
 * kept in Redis so that every instance sharing the ledger's partitions sees one book (a real app
 * keeps this in its own database, with the same check in the transaction that applies).
 */
@Injectable()
export class LedgerBook implements OnApplicationShutdown {
  private readonly logger = new Logger(LedgerBook.name);
  private readonly redis: BookClient;
  private down = false;

  constructor(config: SampleConfig) {
    // few retries per command: a failed apply is the handler's failure, retried by the module
    const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2 });
    redis.defineCommand('applyMovement', { numberOfKeys: 3, lua: APPLY_MOVEMENT });
    redis.on('error', (err: Error) => {
      if (!this.down) this.logger.warn(`the ledger book's connection failed: ${err.message}`);
      this.down = true;
    });
    redis.on('ready', () => {
      if (this.down) this.logger.log("the ledger book's connection is back");
      this.down = false;
    });
    this.redis = redis as BookClient;
  }

  /** Applies `movement` unless it was applied already; `last` is the account's number before. */
  async apply(movement: Movement): Promise<{ verdict: MovementVerdict; last: number }> {
    const { account, seq, amount } = movement;
    const [verdict, last] = await this.redis.applyMovement(
      SEQ_KEY,
      BALANCES_KEY,
      FIGURES_KEY,
      account,
      seq,
      amount,
    );
    return { verdict, last: Number(last) };
  }

  /** The book's figures and the first {@link SHOWN_ACCOUNTS} accounts. */
  async figures(): Promise<LedgerFigures> {
    const [figures, count, [, scanned]] = await Promise.all([
      this.redis.hgetall(FIGURES_KEY),
      this.redis.hlen(SEQ_KEY),
      this.redis.hscan(SEQ_KEY, '0', 'COUNT', SHOWN_ACCOUNTS * 4),
    ]);
    const seqs = new Map<string, number>();
    for (let i = 0; i < scanned.length; i += 2) seqs.set(scanned[i], Number(scanned[i + 1]));
    const accounts = [...seqs.keys()].sort(byName).slice(0, SHOWN_ACCOUNTS);
    const balances = accounts.length > 0 ? await this.redis.hmget(BALANCES_KEY, ...accounts) : [];
    return {
      applied: Number(figures.applied ?? 0),
      replays: Number(figures.replays ?? 0),
      violations: Number(figures.violations ?? 0),
      accounts: count,
      balances: accounts.map((account, i) => ({
        account,
        seq: seqs.get(account) ?? 0,
        balance: Number(balances[i] ?? 0),
      })),
    };
  }

  /** After the loops stopped (they stop before application shutdown): no apply is in flight. */
  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
