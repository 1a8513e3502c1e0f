/**
 * The Nest microservices transport, events (docs/ARCHITECTURE.md "Layers", lib/microservices/), on
 * a real redis-server: `EchoStreamClient.emit()` writes an entry that waits for a server (durable);
 * two instances of one group share the events (each once); two groups each get every event; a
 * handler that throws is retried, then dead-lettered; a `NonRetryableError` is dead-lettered at
 * once; an Observable that errors leaves its entry pending. What is asserted is what the handlers
 * saw and what Redis holds afterwards.
 */
import 'reflect-metadata';
import { Inject, Injectable, Module, type INestMicroservice } from '@nestjs/common';
import { ClientsModule, type ClientProxy } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import type { Redis } from 'ioredis';
import {
  EchoStreamClient,
  EchoStreamExceptionFilter,
  EchoStreamRecordBuilder,
  EchoStreamServer,
} from '../../lib/microservices';
import {
  EventsModule,
  GATE,
  KEYS,
  LOG,
  PATTERNS,
  ServerName,
} from '../fixtures/microservices.handlers';
import { useMicroservices } from '../support/microservices';
import type { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const harness = useMicroservices();
let server: RedisServer;
let redis: Redis;

beforeAll(() => {
  server = harness.server();
  redis = harness.redis();
});
beforeEach(async () => {
  await redis.flushall();
  LOG.reset();
  KEYS.length = 0;
});

function startServer(
  name: string,
  group = 'billing',
  setUp?: (app: INestMicroservice) => void,
): Promise<INestMicroservice> {
  const builder = Test.createTestingModule({ imports: [EventsModule] })
    .overrideProvider(ServerName)
    .useValue({ name });
  return harness.start(builder, { group, consumerName: `${name}-${group}` }, setUp);
}

const client = (): EchoStreamClient => harness.client();
const pendingCount = (stream: string, group: string): Promise<number> =>
  harness.pendingCount(stream, group);

async function deadLetters(stream: string): Promise<Array<Record<string, string>>> {
  return (await redis.xrange(`${stream}:dlq`, '-', '+')).map(([, flat]) => {
    const map: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) map[flat[i]] = flat[i + 1];
    return map;
  });
}

it('handles an event emitted before any server ran once a server starts (durable)', async () => {
  const orders = client();
  await lastValueFrom(orders.emit(PATTERNS.orders, { order: 1 }), { defaultValue: undefined });
  // written in the producer's wire format: `id` (branded) and `data` (JSON)
  const [[, fields]] = await redis.xrange(PATTERNS.orders, '-', '+');
  expect(fields[0]).toBe('id');
  expect(fields.slice(2)).toEqual(['data', '{"order":1}']);

  await startServer('a');
  await waitFor(() => LOG.seen.length === 1);
  expect(LOG.seen[0]).toMatchObject({
    payload: { order: 1 },
    stream: PATTERNS.orders,
    group: 'billing',
    attempts: 1,
  });
  await waitFor(async () => (await pendingCount(PATTERNS.orders, 'billing')) === 0);
});

it('emits through a ClientProxy that ClientsModule registers with customClass', async () => {
  @Injectable()
  class Orders {
    constructor(@Inject('ORDERS') readonly proxy: ClientProxy) {}
  }
  @Module({
    imports: [
      ClientsModule.register([
        { name: 'ORDERS', customClass: EchoStreamClient, options: { connection: server.url } },
      ]),
    ],
    providers: [Orders],
  })
  class CallerModule {}
  const caller = await Test.createTestingModule({ imports: [CallerModule] }).compile();
  const app = caller.createNestApplication();
  await app.init();
  try {
    await lastValueFrom(app.get(Orders).proxy.emit(PATTERNS.orders, { order: 7 }), {
      defaultValue: undefined,
    });
    await startServer('a');
    await waitFor(() => LOG.seen.length === 1);
    expect(LOG.seen[0]).toMatchObject({ payload: { order: 7 }, attempts: 1 });
  } finally {
    await app.close();
  }
});

it('shares the events of one group between two instances, each event once', async () => {
  await startServer('a');
  await startServer('b');
  const events = client();
  const count = 40;
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      lastValueFrom(events.emit(PATTERNS.slow, { i }), { defaultValue: undefined }),
    ),
  );
  await waitFor(() => LOG.seen.length >= count, { timeoutMs: 10_000 });
  await sleep(300); // a duplicate would show up here
  const handled = LOG.seen.map((s) => (s.payload as { i: number }).i).sort((x, y) => x - y);
  expect(handled).toEqual(Array.from({ length: count }, (_, i) => i));
  const byServer = new Set(LOG.seen.map((s) => s.server));
  expect(byServer).toEqual(new Set(['a', 'b']));
  await waitFor(async () => (await pendingCount(PATTERNS.slow, 'billing')) === 0);
});

it('gives every event to each of two groups', async () => {
  await startServer('a', 'billing');
  await startServer('b', 'shipping');
  const events = client();
  for (let i = 0; i < 5; i++)
    await lastValueFrom(events.emit(PATTERNS.orders, { i }), { defaultValue: undefined });
  await waitFor(() => LOG.seen.length >= 10);
  await sleep(200);
  for (const group of ['billing', 'shipping']) {
    const seen = LOG.seen
      .filter((s) => s.group === group)
      .map((s) => (s.payload as { i: number }).i);
    expect(seen.sort()).toEqual([0, 1, 2, 3, 4]);
  }
});

it('runs an @EventPattern in the group its extras name', async () => {
  await startServer('a', 'billing');
  await lastValueFrom(client().emit(PATTERNS.audit, { a: 1 }), { defaultValue: undefined });
  await waitFor(() => LOG.seen.length === 1);
  expect(LOG.seen[0].group).toBe('audit');
  expect((await redis.xinfo('GROUPS', PATTERNS.audit)) as unknown[]).toHaveLength(1);
});

it('retries a throwing event handler, then dead-letters the entry (never acked unhandled)', async () => {
  await startServer('a');
  await lastValueFrom(client().emit(PATTERNS.failing, { f: 1 }), { defaultValue: undefined });
  await waitFor(async () => (await deadLetters(PATTERNS.failing)).length === 1, {
    timeoutMs: 10_000,
  });
  expect(LOG.seen.map((s) => s.attempts)).toEqual([1, 2, 3]);
  const [letter] = await deadLetters(PATTERNS.failing);
  expect(letter.data).toBe('{"f":1}');
  expect(letter.dlq_reason).toBe('max_deliveries');
  expect(letter.dlq_group).toBe('billing');
  await waitFor(async () => (await pendingCount(PATTERNS.failing, 'billing')) === 0);
});

it('dead-letters at once on a NonRetryableError (inside an RpcException)', async () => {
  await startServer('a');
  await lastValueFrom(client().emit(PATTERNS.nonRetryable, { n: 1 }), { defaultValue: undefined });
  await waitFor(async () => (await deadLetters(PATTERNS.nonRetryable)).length === 1);
  expect(LOG.seen).toHaveLength(1);
  const [letter] = await deadLetters(PATTERNS.nonRetryable);
  expect(letter.dlq_reason).toBe('non_retryable');
  expect(letter.dlq_error).toContain('no use retrying');
});

it('leaves the entry pending when the handler returns an Observable that errors', async () => {
  await startServer('a');
  await lastValueFrom(client().emit(PATTERNS.observableError, { o: 1 }), {
    defaultValue: undefined,
  });
  await waitFor(() => LOG.seen.length === 1);
  await sleep(300);
  expect(await pendingCount(PATTERNS.observableError, 'billing')).toBe(1);
  expect(await deadLetters(PATTERNS.observableError)).toEqual([]);
});

it('fails listen() on a pattern that is no string', async () => {
  const strategy = new EchoStreamServer({ connection: server.url, group: 'g' });
  strategy.addHandler({ cmd: 'x' }, async () => undefined, true);
  const failed = await new Promise<unknown>((resolve) => strategy.listen(resolve));
  expect(String(failed)).toContain('is not a string');
  await strategy.close();
});

it('dead-letters a raw NonRetryableError at once with EchoStreamExceptionFilter', async () => {
  await startServer('a', 'billing', (app) => app.useGlobalFilters(new EchoStreamExceptionFilter()));
  await lastValueFrom(client().emit(PATTERNS.rawNonRetryable, { n: 1 }), {
    defaultValue: undefined,
  });
  await waitFor(async () => (await deadLetters(PATTERNS.rawNonRetryable)).length === 1);
  expect(LOG.seen).toHaveLength(1);
  const [letter] = await deadLetters(PATTERNS.rawNonRetryable);
  expect(letter.dlq_reason).toBe('non_retryable');
  expect(letter.dlq_error).toContain('no use retrying, raw');
});

it('close() waits for the entry in hand, then acknowledges it', async () => {
  GATE.reset();
  const app = await startServer('a');
  await lastValueFrom(client().emit(PATTERNS.gated, { g: 1 }), { defaultValue: undefined });
  await waitFor(() => LOG.seen.length === 1);
  let closed = false;
  const closing = app.close().then(() => (closed = true));
  harness.release(app);
  await sleep(200);
  expect(closed).toBe(false);
  GATE.open();
  await closing;
  expect(GATE.finished).toBe(1);
  expect(await pendingCount(PATTERNS.gated, 'billing')).toBe(0);
});

it('reports its status and unwraps to the ioredis connection', async () => {
  const statuses: string[] = [];
  const strategy = new EchoStreamServer({ connection: server.url, group: 'g', consumerName: 's' });
  strategy.status.subscribe((status) => statuses.push(status));
  const ready = new Promise<void>((resolve) => strategy.on('ready', resolve));
  await new Promise<unknown>((resolve) => strategy.listen(resolve));
  await ready;
  await waitFor(() => statuses.includes('connected'));
  const redisOf = strategy.unwrap<Redis>();
  expect(await redisOf.ping()).toBe('PONG');
  await strategy.close();
  expect(statuses[statuses.length - 1]).toBe('disconnected');
});

it('publishes a record with its id (a dedup handler skips the repeat) and its partition key', async () => {
  await startServer('a');
  const events = client();
  const emit = (data: unknown) =>
    lastValueFrom(events.emit(PATTERNS.deduped, data), { defaultValue: undefined });
  await emit(new EchoStreamRecordBuilder({ d: 1 }).setId('order-1').build());
  await waitFor(() => LOG.seen.length === 1);
  // acked, so its dedup record is written: only acked entries count (docs/delivery.md)
  await waitFor(async () => (await pendingCount(PATTERNS.deduped, 'billing')) === 0);
  await emit(new EchoStreamRecordBuilder({ d: 2 }).setId('order-1').build());
  await emit(new EchoStreamRecordBuilder({ d: 3 }).setId('order-2').build());
  await waitFor(() => LOG.seen.length === 2);
  await sleep(200);
  expect(LOG.seen.map((s) => s.payload)).toEqual([{ d: 1 }, { d: 3 }]);

  for (const key of ['k1', 'k2', 'k1'])
    await lastValueFrom(
      events.emit(PATTERNS.keyed, new EchoStreamRecordBuilder({ key }).setKey(key).build()),
      { defaultValue: undefined },
    );
  await waitFor(() => KEYS.length === 3, {
    timeoutMs: 10_000,
    message: 'the keyed handler saw 3 entries',
  });
  const partitionOf = new Map(KEYS.map((k) => [k.key, k.partition]));
  expect(
    KEYS.filter((k) => k.key === 'k1').every((k) => k.partition === partitionOf.get('k1')),
  ).toBe(true);
  expect(KEYS.every((k) => typeof k.partition === 'number')).toBe(true);
});
