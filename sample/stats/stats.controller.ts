import { Controller, Get, Header } from '@nestjs/common';
import { register } from 'prom-client';
import { STATS_PAGE } from './stats-page';
import { StatsService, type StatsView } from './stats.service';

/**
 * `GET /` (live page), `GET /stats` (JSON), `GET /metrics` (Prometheus text format: prom-client's
 * default registry, where EchoStreamModule's `metrics` option put its metrics beside Node's).
 */
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
  @Header('Content-Type', register.contentType)
  metrics(): Promise<string> {
    return register.metrics();
  }
}
