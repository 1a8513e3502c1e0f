import { Controller, Get, Header } from '@nestjs/common';
import { ORDERS_PAGE } from './orders-page';
import { OrdersSummaryService, type OrdersSummary } from './orders-summary.service';

/** `GET /` (the orders page) and `GET /stats` (its JSON: the orders summary). */
@Controller()
export class OrdersPageController {
  constructor(private readonly orders: OrdersSummaryService) {}

  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  page(): string {
    return ORDERS_PAGE;
  }

  @Get('stats')
  @Header('Cache-Control', 'no-store')
  summary(): OrdersSummary {
    return this.orders.summary();
  }
}
