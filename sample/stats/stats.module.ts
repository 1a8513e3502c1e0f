import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders';
import { StatsController } from './stats.controller';
import { StatsService } from './stats.service';

/** The live page, `/stats` and `/metrics`. */
@Module({
  imports: [OrdersModule],
  controllers: [StatsController],
  providers: [StatsService],
})
export class StatsModule {}
