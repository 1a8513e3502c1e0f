import { BadRequestException } from '@nestjs/common';

/** The stream the sample publishes to and consumes. */
export const ORDERS_STREAM = 'orders';

/** An order as published on {@link ORDERS_STREAM} (the `data` field, JSON). */
export interface Order {
  sku: string;
  qty: number;
  /** A poison pill: the billing handler refuses it on every delivery, so it is dead-lettered. */
  poison?: boolean;
}

/** Checks a `POST /orders` body; throws 400 with what is wrong. */
export function parseOrder(body: unknown): Order {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequestException('the body must be a JSON object like {"sku":"A-1","qty":2}');
  }
  const { sku, qty, poison } = body as Record<string, unknown>;
  if (typeof sku !== 'string' || sku.length === 0 || sku.length > 64) {
    throw new BadRequestException('sku must be a string of 1 to 64 characters');
  }
  if (typeof qty !== 'number' || !Number.isInteger(qty) || qty < 1 || qty > 1000) {
    throw new BadRequestException('qty must be an integer from 1 to 1000');
  }
  if (poison !== undefined && typeof poison !== 'boolean') {
    throw new BadRequestException('poison must be a boolean when given');
  }
  return poison ? { sku, qty, poison } : { sku, qty };
}
