import { Controller, Get, Header } from '@nestjs/common';
// A real app imports this from 'nestjs-echo-stream'.
import { PROMETHEUS_CONTENT_TYPE } from '../../lib';
import { STATS_PAGE } from './stats-page';
import { StatsService, type StatsView } from './stats.service';

/** `GET /` (live page), `GET /stats` (JSON), `GET /metrics` (Prometheus text format). */
@Controller()
export class StatsController {
  constructor(private readonly stats: StatsService) {}

  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  page(): string {
    return STATS_PAGE;
  }

  @Get('stats')
  @Header('Cache-Control', 'no-store')
  view(): Promise<StatsView> {
    return this.stats.view();
  }

  @Get('metrics')
  @Header('Content-Type', PROMETHEUS_CONTENT_TYPE)
  metrics(): string {
    return this.stats.prometheus();
  }
}
