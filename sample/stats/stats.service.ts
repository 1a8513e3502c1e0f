import { Injectable } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { ConsumerStats, type ConsumerSnapshot, type GroupInspection } from '../../lib';
import { SampleConfig } from '../config';
import { DeadLettersHandler, OrderLedger, type RecentDeadLetter } from '../orders';

/** One loop: its counters plus live figures from Redis. */
export interface LoopView extends ConsumerSnapshot {
  /** `ConsumerStats.inspect()`; null when Redis could not be asked (see `inspectError`). */
  inspection: GroupInspection | null;
  inspectError: string | null;
}

/** The body of `GET /stats`. */
export interface StatsView {
  at: string;
  failureRate: number;
  loops: LoopView[];
  deadLetters: { total: number; recent: RecentDeadLetter[] };
  ledger: { charged: number; duplicates: number };
}

/** Gathers what `GET /stats` shows. */
@Injectable()
export class StatsService {
  constructor(
    private readonly stats: ConsumerStats,
    private readonly config: SampleConfig,
    private readonly deadLetters: DeadLettersHandler,
    private readonly ledger: OrderLedger,
  ) {}

  async view(): Promise<StatsView> {
    const loops = await Promise.all(
      this.stats.snapshot().map(async (snapshot): Promise<LoopView> => {
        try {
          const inspection = await this.stats.inspect(snapshot.stream, snapshot.group);
          return { ...snapshot, inspection, inspectError: null };
        } catch (err) {
          const inspectError = err instanceof Error ? err.message : String(err);
          return { ...snapshot, inspection: null, inspectError };
        }
      }),
    );
    return {
      at: new Date().toISOString(),
      failureRate: this.config.failureRate,
      loops,
      deadLetters: { total: this.deadLetters.total, recent: this.deadLetters.list() },
      ledger: { charged: this.ledger.total, duplicates: this.ledger.duplicates },
    };
  }
}
