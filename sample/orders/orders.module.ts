import { Module } from '@nestjs/common';
import { NotificationsModule } from '../notifications';
import { OrdersArchiveHandler } from './orders-archive.handler';
import { OrdersController } from './orders.controller';
import { OrdersHandler } from './orders.handler';
import { ShippingHandler } from './shipping.handler';

/** Publishing, billing, shipping and the archive of the orders stream. */
@Module({
  imports: [NotificationsModule],
  controllers: [OrdersController],
  providers: [OrdersHandler, ShippingHandler, OrdersArchiveHandler],
  exports: [OrdersHandler],
})
export class OrdersModule {}
