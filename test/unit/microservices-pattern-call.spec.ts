/**
 * PatternCall (lib/microservices/pattern-call.ts): the entry a handler's `EchoStreamContext`
 * shows. An event's is the engine's message itself (its payload decoded as the user's); a
 * request's a plain object of the engine's message with the user's payload, not an object whose
 * prototype is the message: a fresh prototype per entry cost ~5 µs and garbage per entry
 * (bench/microservices.mjs, the @EventPattern drain at 0.47x the @StreamHandler's).
 */
import { Logger } from '@nestjs/common';
import type { MessageHandler } from '@nestjs/microservices';
import type { StreamMessage } from '../../lib';
import type { EchoStreamContext } from '../../lib/microservices';
import { PatternCall } from '../../lib/microservices/pattern-call';
import type { PatternRoute } from '../../lib/microservices/pattern-routes';
import type { ReplyWriter } from '../../lib/microservices/reply-writer';
import { RequestEnvelope } from '../../lib/microservices/rpc-wire';

function engineMessage(payload: unknown): StreamMessage<unknown> {
  return {
    id: 'order-1',
    entryId: '1-0',
    stream: 'orders',
    group: 'billing',
    consumer: 'c1',
    payload,
    attempts: 2,
    signal: new AbortController().signal,
    saveCheckpoint: async () => undefined,
    tx: {} as StreamMessage<unknown>['tx'],
  };
}

/** What the handler of an event route was called with, for one message. */
async function handOver(message: StreamMessage<unknown>) {
  const seen: Array<{ payload: unknown; ctx: EchoStreamContext }> = [];
  const handler = (async (payload: unknown, ctx: EchoStreamContext) => {
    seen.push({ payload, ctx });
  }) as unknown as MessageHandler;
  const route: PatternRoute = {
    pattern: 'orders',
    stream: 'orders',
    group: 'billing',
    request: false,
    handlers: [handler],
    options: {},
    name: "@EventPattern('orders') in billing",
  };
  await new PatternCall(route, {} as ReplyWriter, new Logger('test')).call(message);
  expect(seen).toHaveLength(1);
  return seen[0];
}

it("hands an event's handler the engine's message itself, its payload the user's", async () => {
  const message = engineMessage({ n: 1 });
  const { payload, ctx } = await handOver(message);
  expect(payload).toEqual({ n: 1 });
  expect(ctx.getMessage()).toBe(message);
  expect(ctx.getEntryId()).toBe('1-0');
  expect(ctx.getId()).toBe('order-1');
  expect(ctx.getAttempts()).toBe(2);
});

it("hands a request's handler the engine's message with its own payload, as a plain copy", async () => {
  const reply = { stream: 'replies', correlationId: 'c', deadline: Infinity, ttlMs: 1000 };
  const message = engineMessage(new RequestEnvelope({ n: 1 }, reply));
  const { payload, ctx } = await handOver(message);
  expect(payload).toEqual({ n: 1 });
  const own = ctx.getMessage();
  expect(Object.getPrototypeOf(own)).toBe(Object.prototype);
  expect(own).toEqual({ ...message, payload: { n: 1 } });
  expect(own.saveCheckpoint).toBe(message.saveCheckpoint);
  expect(own.signal).toBe(message.signal);
  expect(ctx.getEntryId()).toBe('1-0');
  // the engine's message keeps its envelope
  expect(message.payload).toBeInstanceOf(RequestEnvelope);
});
