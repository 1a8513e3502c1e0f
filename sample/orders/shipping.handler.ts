import { Injectable, Logger, UseInterceptors } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { StreamHandler, type StreamMessage } from '../../lib';
import { ORDERS_STREAM, type Order } from './order';
import { StreamLoggingInterceptor } from './stream-logging.interceptor';

/**
 * Shipping: a second consumer group on the same stream (every group sees every entry), in batch
 * mode: one call per read, returning the messages to acknowledge. `dedup` is per group: an order
 * posted twice is skipped here too, so it is packed once.
 */
@Injectable()
@UseInterceptors(StreamLoggingInterceptor)
export class ShippingHandler {
  private readonly logger = new Logger(ShippingHandler.name);

  @StreamHandler(ORDERS_STREAM, 'shipping', {
    batch: true,
    batchSize: 50,
    blockMs: 2000,
    dedup: true,
  })
  async pack(batch: StreamMessage<Order>[]): Promise<StreamMessage<Order>[]> {
    // an order published as-is (POST /orders/unchecked) may carry no numeric qty
    const items = batch.reduce(
      (sum, m) => sum + (Number.isInteger(m.payload.qty) ? m.payload.qty : 0),
      0,
    );
    this.logger.log(`packed ${batch.length} order(s), ${items} item(s)`);
    return batch;
  }
}
