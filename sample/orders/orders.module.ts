import { Module } from '@nestjs/common';
import { DeadLettersHandler } from './dead-letters.handler';
import { OrderLedger } from './order-ledger.service';
import { OrdersArchiveHandler } from './orders-archive.handler';
import { OrdersController } from './orders.controller';
import { OrdersHandler } from './orders.handler';
import { ShippingHandler } from './shipping.handler';

/** Publishing, billing, shipping and the dead letters of the orders stream. */
@Module({
  controllers: [OrdersController],
  providers: [
    OrderLedger,
    OrdersHandler,
    ShippingHandler,
    DeadLettersHandler,
    OrdersArchiveHandler,
  ],
  exports: [OrderLedger, DeadLettersHandler],
})
export class OrdersModule {}
