import { Body, Controller, HttpCode, Post } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { StreamProducer, type PublishReceipt } from '../../lib';
import { ORDERS_STREAM, parseOrder, parseUncheckedOrder } from './order';

/**
 * `POST /orders {"sku":"A-1","qty":2}` publishes an order; 202 with its branded id. With
 * `"id":"co-1234"` (the checkout's own order id) the order is published under that id.
 */
@Controller('orders')
export class OrdersController {
  constructor(private readonly producer: StreamProducer) {}

  @Post()
  @HttpCode(202)
  publish(@Body() body: unknown): Promise<PublishReceipt> {
    const { order, id } = parseOrder(body);
    // A plain publish: a checkout that timed out and posts the order again writes it twice
    // under its id, as a foreign producer's retry would; billing's and shipping's `dedup` skip
    // the second. (The ledger's movements are made idempotent at the write instead.)
    return this.producer.publish(ORDERS_STREAM, order, { id, maxLen: 100_000 });
  }

  /**
   * `POST /orders/unchecked {...}` publishes any small JSON object as it is, the way another
   * service might: the billing handler's ValidationPipe is then what stops a malformed order (a
   * `rejected` dead letter on the page), not this endpoint.
   */
  @Post('unchecked')
  @HttpCode(202)
  publishUnchecked(@Body() body: unknown): Promise<PublishReceipt> {
    return this.producer.publish(ORDERS_STREAM, parseUncheckedOrder(body), { maxLen: 100_000 });
  }
}
