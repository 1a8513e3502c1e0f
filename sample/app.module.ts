import { Module } from '@nestjs/common';
import { register } from 'prom-client';
// A real app imports this from 'nestjs-echo-stream'.
import { EchoStreamDashboardModule, EchoStreamModule } from '../lib';
import { SampleConfig, SampleConfigModule } from './config';
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
    // Read-write only while the sample listens on loopback (its default HOST): anyone who can
    // reach the page could redrive or delete dead letters. A real app adds `guards`.
    EchoStreamDashboardModule.register({
      readOnly: !['127.0.0.1', 'localhost', '::1'].includes(process.env.HOST || '127.0.0.1'),
    }),
    OrdersModule,
    StatsModule,
  ],
})
export class AppModule {}
