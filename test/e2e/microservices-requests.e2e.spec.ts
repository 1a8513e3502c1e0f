/**
 * The Nest microservices transport, requests (lib/microservices/), on a real redis-server:
 * `EchoStreamClient.send()` gets the value of the `@MessagePattern` handler from its own reply
 * stream, 30 calls at once each their own; an `RpcException` comes back as an
 * `EchoStreamRpcError` and the request is acknowledged; a handler that keeps failing is retried,
 * then dead-lettered with an error reply; no reply in time is an `EchoStreamRpcTimeoutError`; a
 * request past its deadline is acknowledged unrun; the microservice's interceptor and pipe run
 * around the handler.
 */
import 'reflect-metadata';
import type { INestMicroservice } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import type { Redis } from 'ioredis';
import {
  EchoStreamClient,
  EchoStreamRpcError,
  EchoStreamRpcTimeoutError,
  RPC_FIELDS,
} from '../../lib/microservices';
import { LOG, PATTERNS, RequestsModule, WrapInterceptor } from '../fixtures/microservices.handlers';
import { useMicroservices } from '../support/microservices';
import { sleep, waitFor } from '../support/wait-for';

const harness = useMicroservices();
let redis: Redis;

beforeAll(() => {
  redis = harness.redis();
});
beforeEach(async () => {
  await redis.flushall();
  LOG.reset();
});

function startServer(setUp?: (app: INestMicroservice) => void): Promise<INestMicroservice> {
  const builder = Test.createTestingModule({ imports: [RequestsModule] });
  return harness.start(builder, { group: 'prices', consumerName: 'prices-1' }, setUp);
}

const client = (timeoutMs?: number, replyTtlMs?: number): EchoStreamClient =>
  harness.client({ timeoutMs, replyTtlMs });
const pendingCount = (stream: string, group: string): Promise<number> =>
  harness.pendingCount(stream, group);

async function failureOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (err) {
    return err;
  }
  throw new Error('the call did not fail');
}

it('answers 30 concurrent sends, each with its own reply', async () => {
  await startServer();
  const prices = client();
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, n) => lastValueFrom(prices.send(PATTERNS.quote, { n }))),
  );
  expect(answers).toEqual(Array.from({ length: 30 }, (_, n) => ({ price: n * 10 })));
  await waitFor(async () => (await pendingCount(PATTERNS.quote, 'prices')) === 0);
  // the reply stream is the client's own, trimmed and given an expiry
  const ttl = await redis.pttl(prices.replyStream);
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(60_000);
  expect(await redis.xlen(prices.replyStream)).toBe(30);
});

it('waits for a server: a request sent before one runs is answered once it starts', async () => {
  const prices = client();
  const answer = lastValueFrom(prices.send(PATTERNS.quote, { n: 7 }));
  await sleep(200);
  await startServer();
  await expect(answer).resolves.toEqual({ price: 70 });
});

it('brings an RpcException back as an EchoStreamRpcError and acknowledges the request', async () => {
  await startServer();
  const err = await failureOf(lastValueFrom(client().send(PATTERNS.refuse, { n: 1 })));
  expect(err).toBeInstanceOf(EchoStreamRpcError);
  expect(err).not.toBeInstanceOf(EchoStreamRpcTimeoutError);
  expect(err).toMatchObject({
    reason: 'rpc',
    pattern: PATTERNS.refuse,
    error: { status: 'error', message: 'no quote for you', code: 'REFUSED' },
  });
  expect(LOG.seen).toHaveLength(1); // not retried
  await waitFor(async () => (await pendingCount(PATTERNS.refuse, 'prices')) === 0);
});

it('retries a failing request handler, then dead-letters it with an error reply', async () => {
  await startServer();
  const err = await failureOf(lastValueFrom(client().send(PATTERNS.broken, { n: 1 })));
  expect(err).toBeInstanceOf(EchoStreamRpcError);
  expect(err).toMatchObject({ reason: 'dead_letter' });
  expect(LOG.seen.map((s) => s.attempts)).toEqual([1, 2]);
  expect(await redis.xlen(`${PATTERNS.broken}:dlq`)).toBe(1);
  await waitFor(async () => (await pendingCount(PATTERNS.broken, 'prices')) === 0);
});

it('tells a timeout apart and drops the reply that comes after it', async () => {
  const prices = client(300);
  const startedAt = Date.now();
  const err = await failureOf(lastValueFrom(prices.send(PATTERNS.quote, { n: 2 })));
  expect(err).toBeInstanceOf(EchoStreamRpcTimeoutError);
  expect(err).not.toBeInstanceOf(EchoStreamRpcError);
  expect(err).toMatchObject({ timeoutMs: 300, pattern: PATTERNS.quote });
  expect(Date.now() - startedAt).toBeGreaterThanOrEqual(290);
  // a late reply to that call is dropped; the next call gets its own
  await startServer();
  await waitFor(async () => (await pendingCount(PATTERNS.quote, 'prices').catch(() => 1)) === 0);
  await expect(lastValueFrom(prices.send(PATTERNS.quote, { n: 3 }))).resolves.toEqual({
    price: 30,
  });
});

it("acknowledges a request past its caller's deadline without running it", async () => {
  await startServer();
  await redis.xadd(
    PATTERNS.quote,
    '*',
    'id',
    'late-1',
    'data',
    '{"n":1}',
    RPC_FIELDS.replyTo,
    'replies-of-nobody',
    RPC_FIELDS.correlation,
    'c-1',
    RPC_FIELDS.deadline,
    String(Date.now() - 1000),
    RPC_FIELDS.replyTtl,
    '1000',
  );
  await waitFor(async () => {
    const groups = (await redis.xinfo('GROUPS', PATTERNS.quote)) as unknown[][];
    const lag = groups[0] ? Number(groups[0][groups[0].indexOf('entries-read') + 1]) : 0;
    return lag === 1 && (await pendingCount(PATTERNS.quote, 'prices')) === 0;
  });
  expect(LOG.seen).toEqual([]);
  expect(await redis.exists('replies-of-nobody')).toBe(0);
});

it("runs the microservice's interceptor and the parameter's pipe around the handler", async () => {
  await startServer((app) => app.useGlobalInterceptors(new WrapInterceptor()));
  const answer = await lastValueFrom(client().send(PATTERNS.piped, { n: 21 }));
  expect(answer).toEqual({ wrapped: { n: 42 } });
  expect(LOG.seen[0].payload).toEqual({ n: 42 });
  expect(LOG.intercepted).toEqual([`rpc:${PATTERNS.piped}`]);
});

it("renews the reply stream's expiry while the client lives; it expires once the client is gone", async () => {
  await startServer();
  const prices = client(undefined, 300);
  await lastValueFrom(prices.send(PATTERNS.quote, { n: 1 }));
  await sleep(800);
  expect(await redis.exists(prices.replyStream)).toBe(1);
  await prices.close();
  await waitFor(async () => (await redis.exists(prices.replyStream)) === 0, { timeoutMs: 2000 });
});
