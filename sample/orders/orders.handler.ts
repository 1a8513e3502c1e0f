import { Inject, Injectable, Logger, UseInterceptors, ValidationPipe } from '@nestjs/common';
import type { ClientProxy } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
// A real app imports these from 'nestjs-echo-stream'.
import { Ctx, Payload, StreamHandler, type StreamMessage } from '../../lib';
// A real app imports this from 'nestjs-echo-stream/microservices'.
import { EchoStreamRecordBuilder } from '../../lib/microservices';
import { SampleConfig } from '../config';
import { NOTIFIER, ORDER_CHARGED, type OrderCharged } from '../notifications';
import { ORDERS_STREAM } from './order';
import { OrderDto } from './order.dto';
import { StreamLoggingInterceptor } from './stream-logging.interceptor';

/**
 * Billing: charges each order once. `dedup: true`: an order whose branded id billing acked
 * already (posted twice by a checkout that timed out) is acked without calling this method; the
 * dashboard's Skipped column and the page count it. Fails at random (`FAILURE_RATE`) to show
 * retries: a failed entry stays pending and comes back after 0.5 s, then 1 s (the `retry`
 * policy), with `attempts` + 1. A poison order fails every time and is dead-lettered when its
 * 3rd delivery fails.
 * The payload arrives as a validated {@link OrderDto}: a malformed order (published as-is by
 * `POST /orders/unchecked`, or by another service) is dead-lettered at once as `rejected`.
 */
@Injectable()
@UseInterceptors(StreamLoggingInterceptor)
export class OrdersHandler {
  private readonly logger = new Logger(OrdersHandler.name);
  /** Orders this process charged. */
  charged = 0;

  constructor(
    private readonly config: SampleConfig,
    @Inject(NOTIFIER) private readonly notifier: ClientProxy,
  ) {}

  @StreamHandler(ORDERS_STREAM, 'billing', {
    dedup: true,
    maxDeliveries: 3,
    minIdleMs: 3000,
    blockMs: 2000,
    retry: { type: 'exponential', initialMs: 500, factor: 2, maxMs: 5000 },
  })
  async charge(
    @Payload(new ValidationPipe({ transform: true })) payload: OrderDto,
    @Ctx() message: StreamMessage<OrderDto>,
  ): Promise<void> {
    const { id, attempts } = message;
    if (payload.poison) {
      throw new Error(`poison order ${id}: refused on every delivery (attempt ${attempts})`);
    }
    if (Math.random() < this.config.failureRate) {
      throw new Error(
        `simulated failure charging order ${id} (FAILURE_RATE=${this.config.failureRate}, attempt ${attempts})`,
      );
    }
    this.charged++;
    this.logger.log(
      `handled order ${id}: ${payload.qty} x ${payload.sku} (entry ${message.entryId}, attempt ${attempts})`,
    );
    // the notifications microservice hears of it; under the order's id, so that a charge retried
    // after this emit (its ack lost) notifies once (its @EventPattern has `dedup: true`)
    const event: OrderCharged = { orderId: id, sku: payload.sku, qty: payload.qty };
    await lastValueFrom(
      this.notifier.emit(ORDER_CHARGED, new EchoStreamRecordBuilder(event).setId(id).build()),
      { defaultValue: undefined },
    );
  }
}
