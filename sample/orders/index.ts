export { ORDERS_STREAM, parseOrder, type Order, type OrderRequest } from './order';
export { OrdersArchiveHandler } from './orders-archive.handler';
export { OrdersController } from './orders.controller';
export { OrdersHandler } from './orders.handler';
export { OrdersModule } from './orders.module';
export { ShippingHandler } from './shipping.handler';
