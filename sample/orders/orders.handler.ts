import { Injectable, Logger, UseInterceptors, ValidationPipe } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { Ctx, Payload, StreamHandler, type StreamMessage } from '../../lib';
import { SampleConfig } from '../config';
import { ORDERS_STREAM } from './order';
import { OrderDto } from './order.dto';
import { OrderLedger } from './order-ledger.service';
import { StreamLoggingInterceptor } from './stream-logging.interceptor';

/**
 * Billing: charges each order once. Fails at random (`FAILURE_RATE`) to show retries: a failed
 * entry stays pending and comes back after 0.5 s, then 1 s (the `retry` policy), with `attempts`
 * + 1 (the page's "Retrying" column shows those waiting). A poison order fails every time and is
 * dead-lettered when its 3rd delivery fails.
 * The payload arrives as a validated {@link OrderDto}: a malformed order (published as-is by
 * `POST /orders/unchecked`, or by another service) is dead-lettered at once as `rejected`.
 */
@Injectable()
@UseInterceptors(StreamLoggingInterceptor)
export class OrdersHandler {
  private readonly logger = new Logger(OrdersHandler.name);

  constructor(
    private readonly config: SampleConfig,
    private readonly ledger: OrderLedger,
  ) {}

  @StreamHandler(ORDERS_STREAM, 'billing', {
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
    if (this.ledger.seen(id)) {
      this.logger.log(`order ${id} was charged already: skipping the duplicate delivery`);
      return;
    }
    if (Math.random() < this.config.failureRate) {
      throw new Error(
        `simulated failure charging order ${id} (FAILURE_RATE=${this.config.failureRate}, attempt ${attempts})`,
      );
    }
    this.ledger.record(id);
    this.logger.log(
      `handled order ${id}: ${payload.qty} x ${payload.sku} (entry ${message.entryId}, attempt ${attempts})`,
    );
  }
}
