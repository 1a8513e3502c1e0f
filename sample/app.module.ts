import { Module } from '@nestjs/common';
// A real app imports this from 'nestjs-echo-stream'.
import { EchoStreamDashboardModule, EchoStreamModule } from '../lib';
import { SampleConfig, SampleConfigModule } from './config';
import { OrdersModule } from './orders';
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
