import { Controller, Get, Header } from '@nestjs/common';
import { Registry, register } from 'prom-client';

/**
 * `GET /metrics` (Prometheus text format): the app's prom-client registry (the default one),
 * where EchoStreamModule's `metrics` option put its metrics beside Node's (NodeMetrics).
 */
@Controller()
export class MetricsController {
  constructor(private readonly registry: Registry) {}

  @Get('metrics')
  @Header('Content-Type', register.contentType)
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
