import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders';
import { MetricsController } from './metrics.controller';
import { NodeMetrics } from './node-metrics';
import { OrdersPageController } from './orders-page.controller';
import { OrdersSummaryService } from './orders-summary.service';

/**
 * The orders page (`GET /`, with a link to the dashboard), its JSON (`GET /stats`) and
 * `GET /metrics` (with Node's default metrics). The consumer loops are the dashboard's to show.
 */
@Module({
  imports: [OrdersModule],
  controllers: [OrdersPageController, MetricsController],
  providers: [OrdersSummaryService, NodeMetrics],
})
export class StatsModule {}
