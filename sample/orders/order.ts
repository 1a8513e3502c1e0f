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

/** Limit of `POST /orders/unchecked` bodies: a small JSON object, nothing else. */
const UNCHECKED_MAX_BYTES = 1024;

/**
 * Checks only that a `POST /orders/unchecked` body is a small JSON object (the rest is left to the
 * billing handler's ValidationPipe); throws 400 otherwise.
 */
export function parseUncheckedOrder(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequestException('the body must be a JSON object');
  }
  if (JSON.stringify(body).length > UNCHECKED_MAX_BYTES) {
    throw new BadRequestException(`the body must be at most ${UNCHECKED_MAX_BYTES} bytes of JSON`);
  }
  return body as Record<string, unknown>;
}

/** A `POST /orders` body: the order, and the caller's own id for it when it has one. */
export interface OrderRequest {
  order: Order;
  /** Published as the entry's branded id: a retry of the same order carries the same one. */
  id: string | undefined;
}

const ORDER_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Checks a `POST /orders` body; throws 400 with what is wrong. */
export function parseOrder(body: unknown): OrderRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequestException('the body must be a JSON object like {"sku":"A-1","qty":2}');
  }
  const { sku, qty, poison, id } = body as Record<string, unknown>;
  if (typeof sku !== 'string' || sku.length === 0 || sku.length > 64) {
    throw new BadRequestException('sku must be a string of 1 to 64 characters');
  }
  if (typeof qty !== 'number' || !Number.isInteger(qty) || qty < 1 || qty > 1000) {
    throw new BadRequestException('qty must be an integer from 1 to 1000');
  }
  if (poison !== undefined && typeof poison !== 'boolean') {
    throw new BadRequestException('poison must be a boolean when given');
  }
  if (id !== undefined && (typeof id !== 'string' || !ORDER_ID.test(id))) {
    throw new BadRequestException('id must be 1 to 64 letters, digits, ., _, : or - when given');
  }
  return { order: poison ? { sku, qty, poison } : { sku, qty }, id };
}
