// Compiled with --noEmit only (by run.mjs; .cts/.mts so the root tsconfig, which includes
// test/**/*.ts, skips it): proves the packed typings resolve for a TypeScript app of this
// module kind (CommonJS for .cts, ESM for .mts) under moduleResolution nodenext, decorators included.
import { Controller, Inject, Injectable, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  ClientsModule,
  Ctx as RpcCtx,
  EventPattern,
  MessagePattern,
  Payload as RpcPayload,
  type ClientProxy,
  type MicroserviceOptions,
} from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
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
  EchoStreamServer as RootEchoStreamServer,
} from 'nestjs-echo-stream';
import {
  EchoStreamClient,
  EchoStreamContext,
  EchoStreamExceptionFilter,
  EchoStreamRecordBuilder,
  EchoStreamRpcError,
  EchoStreamRpcTimeoutError,
  EchoStreamServer,
  RPC_FIELDS,
  type EchoStreamClientOptions,
  type EchoStreamServerOptions,
  type EchoStreamStatus,
  type RpcErrorReason,
} from 'nestjs-echo-stream/microservices';

// the root's transport classes are the subpath's, as values and as types
export const rootServer: typeof EchoStreamServer = RootEchoStreamServer;
export const rootServerType = (server: RootEchoStreamServer): EchoStreamServer => server;

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

// The transport through the subpath export `nestjs-echo-stream/microservices` (its own typings,
// against this app's @nestjs/microservices): a microservice with EchoStreamServer, typed options,
// @EventPattern / @MessagePattern handlers with EchoStreamContext, EchoStreamClient as
// ClientsModule's customClass and typed emit / send answers.
interface Quote {
  n: number;
}
interface Price {
  price: number;
}

@Controller()
export class OrdersController {
  @EventPattern<string>('orders.created', { group: 'billing', maxDeliveries: 5 })
  created(@RpcPayload() order: Order, @RpcCtx() ctx: EchoStreamContext): void {
    const entry: StreamMessage<Order> = ctx.getMessage<Order>();
    const where: string = `${ctx.getPattern()} ${ctx.getStream()} ${ctx.getGroup()}`;
    const ids: string = `${ctx.getEntryId()} ${ctx.getId()} ${entry.id}`;
    const attempts: number = ctx.getAttempts();
    void where;
    void ids;
    void attempts;
  }

  @MessagePattern('prices.quote')
  quote(@RpcPayload() quote: Quote): Promise<Price> {
    return Promise.resolve({ price: quote.n * 10 });
  }
}

export const serverOptions: EchoStreamServerOptions = {
  connection: 'redis://127.0.0.1:6379',
  group: 'billing',
  streamOf: (pattern: string) => `ms:${pattern}`,
  defaults: { blockMs: 1000 },
};
export const clientOptions: EchoStreamClientOptions = {
  connection: 'redis://127.0.0.1:6379',
  timeoutMs: 5000,
  replyTtlMs: 60_000,
};

@Module({
  imports: [
    ClientsModule.register([
      { name: 'ORDERS', customClass: EchoStreamClient, options: clientOptions },
    ]),
  ],
  controllers: [OrdersController],
})
export class MicroserviceModule {}

@Injectable()
export class Orders {
  constructor(@Inject('ORDERS') private readonly orders: ClientProxy) {}

  async place(order: Order): Promise<Price | RpcErrorReason | number> {
    const record = new EchoStreamRecordBuilder(order).setId('order-1').setKey(order.sku).build();
    await lastValueFrom(this.orders.emit('orders.created', record), { defaultValue: undefined });
    try {
      return await lastValueFrom(this.orders.send<Price, Quote>('prices.quote', { n: order.qty }));
    } catch (err) {
      if (err instanceof EchoStreamRpcTimeoutError) return err.timeoutMs;
      if (err instanceof EchoStreamRpcError) return err.reason;
      throw err;
    }
  }
}

export async function startMicroservice(): Promise<[INestMicroservice, string, string]> {
  const server = new EchoStreamServer(serverOptions);
  server.status.subscribe((status: EchoStreamStatus) => void status);
  server.on('error', (err: Error) => void err);
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(MicroserviceModule, {
    strategy: server,
  });
  app.useGlobalFilters(new EchoStreamExceptionFilter());
  await app.listen();
  const client = new EchoStreamClient(clientOptions);
  await client.connect();
  const replyStream: string = client.replyStream;
  await client.close();
  return [app, replyStream, RPC_FIELDS.correlation];
}
