import { Controller, Get, Header } from '@nestjs/common';
import { register } from 'prom-client';

/**
 * `GET /metrics` (Prometheus text format): prom-client's default registry, where
 * EchoStreamModule's `metrics` option put its metrics beside Node's (NodeMetrics).
 */
@Controller()
export class MetricsController {
  @Get('metrics')
  @Header('Content-Type', register.contentType)
  metrics(): Promise<string> {
    return register.metrics();
  }
}
