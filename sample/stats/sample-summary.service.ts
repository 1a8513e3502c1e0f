import { Injectable } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { ConsumerStats, partitionOf } from '../../lib';
import { SampleConfig } from '../config';
import { DeadLettersHandler, type RecentDeadLetter } from '../dead-letters';
import {
  LEDGER_PARTITIONS,
  LEDGER_STREAM,
  LedgerBook,
  type AccountBalance,
  type LedgerFigures,
} from '../ledger';
import { ORDERS_STREAM, OrdersHandler } from '../orders';

/**
 * Where app.module.ts mounts `EchoStreamDashboardModule` (its default `path`): the consumer loops,
 * their groups, pending entries and dead letters are shown there, not by the sample.
 */
export const SAMPLE_DASHBOARD_PATH = '/echo-stream';

/** The body of `GET /stats`: what the sample's handlers did. */
export interface SampleSummary {
  at: string;
  /** `FAILURE_RATE`: the share of deliveries the billing handler fails on purpose. */
  failureRate: number;
  /**
   * Billing in this process: orders charged, and orders skipped by `dedup` because their id
   * was charged already (ConsumerStats' `totalDuplicates` of orders/billing).
   */
  billing: { charged: number; duplicates: number };
  /**
   * The partitioned ledger: the book's figures (shared by every instance), each shown account
   * with its partition, and the partitions this process owns now.
   */
  ledger: Omit<LedgerFigures, 'balances'> & {
    stream: string;
    partitions: number;
    ownedHere: number[];
    balances: Array<AccountBalance & { partition: number }>;
  };
  /** What the `@DeadLetter()` handler received (the newest 20; `total` since start). */
  deadLetters: { total: number; recent: RecentDeadLetter[] };
  /** Where the dashboard is, for the page's link. */
  dashboard: string;
}

/**
 * Gathers what `GET /stats` shows: the handlers' own figures, ConsumerStats (no I/O) and the
 * ledger's book (one read of Redis).
 */
@Injectable()
export class SampleSummaryService {
  constructor(
    private readonly config: SampleConfig,
    private readonly stats: ConsumerStats,
    private readonly billing: OrdersHandler,
    private readonly book: LedgerBook,
    private readonly deadLetters: DeadLettersHandler,
  ) {}

  async summary(): Promise<SampleSummary> {
    const { balances, ...figures } = await this.book.figures();
    const owned = this.stats.get(LEDGER_STREAM, 'balances')?.partitions ?? [];
    return {
      at: new Date().toISOString(),
      failureRate: this.config.failureRate,
      billing: {
        charged: this.billing.charged,
        duplicates: this.stats.get(ORDERS_STREAM, 'billing')?.totalDuplicates ?? 0,
      },
      ledger: {
        stream: LEDGER_STREAM,
        partitions: LEDGER_PARTITIONS,
        ownedHere: owned.map((p) => p.partition).sort((a, b) => a - b),
        ...figures,
        balances: balances.map((b) => ({
          ...b,
          partition: partitionOf(b.account, LEDGER_PARTITIONS),
        })),
      },
      deadLetters: { total: this.deadLetters.total, recent: this.deadLetters.list() },
      dashboard: SAMPLE_DASHBOARD_PATH,
    };
  }
}
