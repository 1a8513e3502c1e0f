export { DeadLettersHandler, type RecentDeadLetter } from './dead-letters.handler';
export { ORDERS_STREAM, parseOrder, type Order } from './order';
export { OrderLedger } from './order-ledger.service';
export { OrdersArchiveHandler } from './orders-archive.handler';
export { OrdersController } from './orders.controller';
export { OrdersHandler } from './orders.handler';
export { OrdersModule } from './orders.module';
export { ShippingHandler } from './shipping.handler';
