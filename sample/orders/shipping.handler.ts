import { Injectable, Logger, UseInterceptors } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { StreamHandler, type StreamMessage } from '../../lib';
import { ORDERS_STREAM, type Order } from './order';
import { StreamLoggingInterceptor } from './stream-logging.interceptor';

/**
 * Shipping: a second consumer group on the same stream (every group sees every entry), in batch
 * mode: one call per read, returning the messages to acknowledge.
 */
@Injectable()
@UseInterceptors(StreamLoggingInterceptor)
export class ShippingHandler {
  private readonly logger = new Logger(ShippingHandler.name);

  @StreamHandler(ORDERS_STREAM, 'shipping', { batch: true, batchSize: 50, blockMs: 2000 })
  async pack(batch: StreamMessage<Order>[]): Promise<StreamMessage<Order>[]> {
    const items = batch.reduce((sum, m) => sum + m.payload.qty, 0);
    this.logger.log(`packed ${batch.length} order(s), ${items} item(s)`);
    return batch;
  }
}
