import { Module } from '@nestjs/common';
import { Registry } from 'prom-client';
// A real app imports this from 'nestjs-echo-stream'.
import { EchoStreamDashboardModule, EchoStreamModule } from '../lib';
import { SampleConfig, SampleConfigModule } from './config';
import { sampleDashboardOptions } from './dashboard';
import { DeadLettersModule } from './dead-letters';
import { LEDGER_PARTITIONS, LEDGER_STREAM, LedgerModule } from './ledger';
import { ORDERS_STREAM, OrdersModule } from './orders';
import { NotificationsModule } from './notifications';
import { StatsModule } from './stats/stats.module';

/**
 * The sample: publish orders and account movements over HTTP, consume the orders in two groups
 * and the movements on a partitioned stream, notify each charged order through a Nest
 * microservice on EchoStreamServer (sample/notifications/), watch it on `GET /`.
 */
@Module({
  imports: [
    SampleConfigModule,
    EchoStreamModule.forRootAsync({
      inject: [SampleConfig, Registry],
      useFactory: (config: SampleConfig, registry: Registry) => ({
        connection: config.redisUrl,
        consumerName: config.consumerName,
        shutdownTimeoutMs: 5000,
        // the ledger's partition count, declared once: every keyed publish to it routes by it
        producer: { partitions: { [LEDGER_STREAM]: LEDGER_PARTITIONS } },
        // keep the newest 1000 orders (more while a group still needs them); older ones go to
        // OrdersArchiveHandler's JSON-lines file first
        retention: [{ stream: ORDERS_STREAM, maxLen: 1000 }],
        retentionIntervalMs: 10_000,
        // the module's metrics in the app's prom-client registry (the default one), on GET /metrics
        metrics: { registry },
      }),
    }),
    // Read-write only behind a guard checking ECHO_DASHBOARD_TOKEN; read-only without one.
    EchoStreamDashboardModule.register(sampleDashboardOptions()),
    OrdersModule,
    LedgerModule,
    DeadLettersModule,
    NotificationsModule,
    StatsModule,
  ],
})
export class AppModule {}
