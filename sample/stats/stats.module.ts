import { Module } from '@nestjs/common';
import { DeadLettersModule } from '../dead-letters';
import { LedgerModule } from '../ledger';
import { OrdersModule } from '../orders';
import { MetricsController } from './metrics.controller';
import { NodeMetrics } from './node-metrics';
import { SamplePageController } from './sample-page.controller';
import { SampleSummaryService } from './sample-summary.service';

/**
 * The sample's page (`GET /`, with a link to the dashboard), its JSON (`GET /stats`) and
 * `GET /metrics` (with Node's default metrics). The consumer loops are the dashboard's to show.
 */
@Module({
  imports: [OrdersModule, LedgerModule, DeadLettersModule],
  controllers: [SamplePageController, MetricsController],
  providers: [SampleSummaryService, NodeMetrics],
})
export class StatsModule {}
