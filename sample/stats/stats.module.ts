import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders';
import { NodeMetrics } from './node-metrics';
import { StatsController } from './stats.controller';
import { StatsService } from './stats.service';

/** The live page, `/stats` and `/metrics` (with Node's default metrics). */
@Module({
  imports: [OrdersModule],
  controllers: [StatsController],
  providers: [StatsService, NodeMetrics],
})
export class StatsModule {}
