import { Injectable } from '@nestjs/common';
import { SampleConfig } from '../config';
import { DeadLettersHandler, OrderLedger, type RecentDeadLetter } from '../orders';

/**
 * Where app.module.ts mounts `EchoStreamDashboardModule` (its default `path`): the consumer loops,
 * their groups, pending entries and dead letters are shown there, not by the sample.
 */
export const SAMPLE_DASHBOARD_PATH = '/echo-stream';

/** The body of `GET /stats`: what the sample's handlers did with the orders. */
export interface OrdersSummary {
  at: string;
  /** `FAILURE_RATE`: the share of deliveries the billing handler fails on purpose. */
  failureRate: number;
  /** Billing's ledger: orders charged, and deliveries skipped because already charged. */
  ledger: { charged: number; duplicates: number };
  /** What the `@DeadLetter('orders')` handler received (the newest 20; `total` since start). */
  deadLetters: { total: number; recent: RecentDeadLetter[] };
  /** Where the dashboard is, for the page's link. */
  dashboard: string;
}

/** Gathers what `GET /stats` shows. No Redis call: the figures are the handlers' own. */
@Injectable()
export class OrdersSummaryService {
  constructor(
    private readonly config: SampleConfig,
    private readonly deadLetters: DeadLettersHandler,
    private readonly ledger: OrderLedger,
  ) {}

  summary(): OrdersSummary {
    return {
      at: new Date().toISOString(),
      failureRate: this.config.failureRate,
      ledger: { charged: this.ledger.total, duplicates: this.ledger.duplicates },
      deadLetters: { total: this.deadLetters.total, recent: this.deadLetters.list() },
      dashboard: SAMPLE_DASHBOARD_PATH,
    };
  }
}
