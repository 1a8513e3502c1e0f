// Compiled with --noEmit only (by run.mjs; .cts/.mts so the root tsconfig, which includes
// test/**/*.ts, skips it): proves the packed typings resolve for a TypeScript app of this
// module kind (CommonJS for .cts, ESM for .mts) under moduleResolution nodenext, decorators included.
import { Injectable, Module } from '@nestjs/common';
import {
  ConsumerStats,
  Ctx,
  DeadLetter,
  ECHO_STREAM_CONTEXT_TYPE,
  EchoStreamModule,
  PROMETHEUS_CONTENT_TYPE,
  StreamHandler,
  StreamProducer,
  Payload,
  brandedIdTime,
  type ConsumerSnapshot,
  type DeadLetterMessage,
  type EchoStreamMetricsOptions,
  type GroupInspection,
  type StreamMessage,
} from 'nestjs-echo-stream';

interface Order {
  sku: string;
  qty: number;
}

@Injectable()
export class Billing {
  constructor(
    private readonly producer: StreamProducer,
    private readonly stats: ConsumerStats,
  ) {}

  @StreamHandler('orders', 'billing', { maxDeliveries: 3, minIdleMs: 3000 })
  async charge(message: StreamMessage<Order>): Promise<void> {
    const when: Date = brandedIdTime(message.id);
    const qty: number = message.payload.qty;
    void when;
    void qty;
  }

  @StreamHandler('orders', 'audit')
  audit(@Payload() order: Order, @Ctx() message: StreamMessage<Order>): string {
    return `${message.entryId} ${order.sku} ${ECHO_STREAM_CONTEXT_TYPE}`;
  }

  @DeadLetter('orders')
  onDead(letter: DeadLetterMessage): void {
    const reason: 'decode_error' | 'max_deliveries' | 'non_retryable' | 'rejected' = letter.reason;
    void reason;
  }

  async figures(): Promise<[ConsumerSnapshot[], GroupInspection, string, string]> {
    const { id } = await this.producer.publish<Order>('orders', { sku: 'A-1', qty: 2 });
    void id;
    return [
      this.stats.snapshot(),
      await this.stats.inspect('orders', 'billing'),
      this.stats.prometheus(),
      PROMETHEUS_CONTENT_TYPE,
    ];
  }
}

@Module({
  imports: [
    EchoStreamModule.forRootAsync({
      useFactory: () => ({ connection: 'redis://127.0.0.1:6379', defaults: { batchSize: 50 } }),
    }),
  ],
  providers: [Billing],
})
export class AppModule {}

// The metrics option is typed without prom-client's typings (an app without prom-client compiles).
export const metricsOption: EchoStreamMetricsOptions = {
  registry: { registerMetric() {}, getSingleMetric: () => undefined, removeSingleMetric() {} },
};
