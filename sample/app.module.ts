import { Module } from '@nestjs/common';
import { register } from 'prom-client';
// A real app imports this from 'nestjs-echo-stream'.
import { EchoStreamDashboardModule, EchoStreamModule } from '../lib';
import { SampleConfig, SampleConfigModule } from './config';
import { sampleDashboardOptions } from './dashboard';
import { ORDERS_STREAM, OrdersModule } from './orders';
import { StatsModule } from './stats/stats.module';

/** The sample: publish orders over HTTP, consume them in two groups, watch it on `GET /`. */
@Module({
  imports: [
    SampleConfigModule,
    EchoStreamModule.forRootAsync({
      inject: [SampleConfig],
      useFactory: (config: SampleConfig) => ({
        connection: config.redisUrl,
        consumerName: config.consumerName,
        shutdownTimeoutMs: 5000,
        // keep the newest 1000 orders (more while a group still needs them); older ones go to
        // OrdersArchiveHandler's JSON-lines file first
        retention: [{ stream: ORDERS_STREAM, maxLen: 1000 }],
        retentionIntervalMs: 10_000,
        // the module's metrics in prom-client's default registry, served on GET /metrics
        metrics: { registry: register },
      }),
    }),
    // Read-write only behind a guard checking ECHO_DASHBOARD_TOKEN; read-only without one.
    EchoStreamDashboardModule.register(sampleDashboardOptions()),
    OrdersModule,
    StatsModule,
  ],
})
export class AppModule {}
