/**
 * Nest-native handlers (docs/delivery.md "Nest pipeline") on a real redis-server: guards, interceptors, pipes and filters
 * at global, class and method level run on real entries in Nest's documented order; a guard or
 * pipe refusal is a `rejected` dead letter at once; a filter that returns acks, one that throws
 * leaves the entry pending. What is asserted is what Redis holds afterwards.
 */
import 'reflect-metadata';
import {
  Injectable,
  Logger,
  UseGuards,
  Scope,
  type INestApplication,
  type NestInterceptor,
} from '@nestjs/common';
import { APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { ValidationPipe } from '@nestjs/common';
import { jest } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { EchoStreamModule, ECHO_STREAM_CONTEXT_TYPE, Payload, StreamHandler } from '../../lib';
import { EchoStreamExplorer } from '../../lib/discovery/echo-stream.explorer';
import { HandlerPipelineFactory } from '../../lib/handlers/handler-pipeline.factory';
import {
  BATCH_FILTER_STREAM,
  BATCH_GUARD_STREAM,
  BATCH_STREAM,
  BatchFilterHandler,
  BatchGuardHandler,
  BatchHandler,
  DTO_STREAM,
  DtoHandler,
  LOG,
  PIPELINE_STREAM,
  PipelineModule,
  PLAIN_STREAM,
  PlainHandler,
} from '../fixtures/pipeline.handlers';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let app: INestApplication | undefined;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await stopAllRedisServers();
});
beforeEach(async () => {
  await redis.flushall();
  LOG.reset();
});
afterEach(async () => {
  await app?.close();
  app = undefined;
  jest.restoreAllMocks();
});

async function boot(imports: unknown[], providers: unknown[] = []): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      EchoStreamModule.forRoot({
        connection: server.url,
        consumerName: 'e2e',
        shutdownTimeoutMs: 2000,
      }),
      ...(imports as never[]),
    ],
    providers: providers as never[],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

async function publish(stream: string, id: string, payload: unknown): Promise<string> {
  return (await redis.xadd(stream, '*', 'id', id, 'data', JSON.stringify(payload))) as string;
}

async function pendingIds(stream: string): Promise<string[]> {
  const rows = (await redis.xpending(stream, 'g', '-', '+', 100)) as Array<[string, ...unknown[]]>;
  return rows.map((row) => row[0]);
}

async function deadLetterFields(stream: string): Promise<Array<Record<string, string>>> {
  const entries = await redis.xrange(`${stream}:dlq`, '-', '+');
  return entries.map(([, fields]) => {
    const record: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2) record[fields[i]] = fields[i + 1];
    return record;
  });
}

describe('Nest pipeline on @StreamHandler', () => {
  it('runs global, class and method guards, interceptors and pipes in Nest order around the handler', async () => {
    await boot([PipelineModule]);
    const entryId = await publish(PIPELINE_STREAM, 'ok-1', { kind: 'ok' });
    await waitFor(
      async () => LOG.received.length === 1 && (await pendingIds(PIPELINE_STREAM)).length === 0,
    );
    expect(LOG.events).toEqual([
      'guard:global',
      'guard:class',
      'guard:method',
      'interceptor:global:before',
      'interceptor:class:before',
      'interceptor:method:before',
      'pipe:global',
      'pipe:class',
      'pipe:method',
      'pipe:param',
      'handler',
      'interceptor:method:after',
      'interceptor:class:after',
      'interceptor:global:after',
    ]);
    // the execution context a guard sees
    expect(LOG.contexts).toEqual([
      {
        type: ECHO_STREAM_CONTEXT_TYPE,
        data: { kind: 'ok' },
        entryId,
        handler: 'handle',
        cls: 'PipelineHandler',
      },
    ]);
    expect(ECHO_STREAM_CONTEXT_TYPE).toBe('echo-stream');
    expect(LOG.received).toEqual([{ kind: 'ok' }]);
  });

  it('a filter that returns acks the entry: method, class and global filters each catch their own', async () => {
    await boot([PipelineModule]);
    await publish(PIPELINE_STREAM, 'm', { kind: 'method' });
    await publish(PIPELINE_STREAM, 'c', { kind: 'class' });
    await publish(PIPELINE_STREAM, 'g', { kind: 'global' });
    await waitFor(
      async () => LOG.received.length === 3 && (await pendingIds(PIPELINE_STREAM)).length === 0,
    );
    const filters = LOG.events.filter((e) => e.startsWith('filter:'));
    expect(filters).toEqual([
      'filter:method:echo-stream',
      'filter:class:echo-stream',
      'filter:global:echo-stream',
    ]);
    expect(await deadLetterFields(PIPELINE_STREAM)).toEqual([]);
  });

  it('an error no filter handles, a filter that throws, or an interceptor error leaves the entry pending for redelivery (not rejected)', async () => {
    await boot([PipelineModule]);
    const plain = await publish(PIPELINE_STREAM, 'p', { kind: 'plain' });
    const rethrown = await publish(PIPELINE_STREAM, 'r', { kind: 'rethrow' });
    const intercepted = await publish(PIPELINE_STREAM, 'i', { kind: 'interceptor-error' });
    const ok = await publish(PIPELINE_STREAM, 'ok', { kind: 'ok' });
    await waitFor(() => LOG.received.length === 4);
    await waitFor(async () => !(await pendingIds(PIPELINE_STREAM)).includes(ok));
    expect(await pendingIds(PIPELINE_STREAM)).toEqual([plain, rethrown, intercepted]);
    expect(LOG.events).toContain('filter:method-rethrow:echo-stream');
    expect(await deadLetterFields(PIPELINE_STREAM)).toEqual([]);
  });

  it('a guard that refuses dead-letters the entry at once with reason rejected; nothing after the guards runs', async () => {
    await boot([PipelineModule]);
    const entryId = await publish(PIPELINE_STREAM, 'deny-1', { deny: true });
    await waitFor(() => LOG.deadLetters.length === 1);
    await waitFor(async () => (await pendingIds(PIPELINE_STREAM)).length === 0);
    expect(LOG.events).toEqual(['guard:global', 'guard:class', 'guard:method']);
    expect(LOG.received).toEqual([]);
    expect(LOG.deadLetters[0]).toMatchObject({
      reason: 'rejected',
      entryId,
      id: 'deny-1',
      attempts: 1,
    });
    expect(LOG.deadLetters[0].error).toMatch(/Forbidden resource/);
    const [copy] = await deadLetterFields(PIPELINE_STREAM);
    expect(copy).toMatchObject({ id: 'deny-1', dlq_reason: 'rejected', dlq_entry_id: entryId });
    expect(copy.dlq_error).toMatch(/Forbidden resource/);
  });

  it('a pipe that throws dead-letters the entry at once with reason rejected and its message', async () => {
    await boot([PipelineModule]);
    await publish(PIPELINE_STREAM, 'bad-1', { failPipe: true });
    await waitFor(() => LOG.deadLetters.length === 1);
    expect(LOG.received).toEqual([]);
    expect(LOG.events).not.toContain('handler');
    expect(LOG.deadLetters[0]).toMatchObject({ reason: 'rejected', error: 'param pipe says no' });
    expect(await pendingIds(PIPELINE_STREAM)).toEqual([]);
  });

  it('ValidationPipe + class-validator: a valid payload arrives as a DTO, an invalid one is a rejected dead letter with each failed constraint, never retried', async () => {
    await boot([], [DtoHandler]);
    const good = await publish(DTO_STREAM, 'good', { sku: 'abc-1', quantity: 2 });
    const bad = await publish(DTO_STREAM, 'bad', { sku: 'x', quantity: -1 });
    await waitFor(() => LOG.received.length === 1 && LOG.deadLetters.length === 1, {
      message: 'one DTO and one dead letter',
      timeoutMs: 3000,
    }).catch((err) => {
      throw new Error(`${String(err)} ${JSON.stringify(LOG)}`);
    });
    expect(LOG.received).toEqual([
      { order: { sku: 'abc-1', quantity: 2 }, isDto: true, entryId: good },
    ]);
    const letter = LOG.deadLetters[0];
    expect(letter).toMatchObject({ reason: 'rejected', entryId: bad, attempts: 1 });
    expect(letter.error).toContain('sku must be longer than or equal to 3 characters');
    expect(letter.error).toContain('quantity must be a positive number');
    const [copy] = await deadLetterFields(DTO_STREAM);
    expect(copy).toMatchObject({ id: 'bad', dlq_reason: 'rejected', dlq_attempts: '1' });
    expect(copy.dlq_error).toBe(letter.error);
    // never retried: nothing pending, the handler never saw it, the group delivered it once
    await sleep(300);
    expect(await pendingIds(DTO_STREAM)).toEqual([]);
    expect(LOG.received).toHaveLength(1);
    expect(LOG.deadLetters).toHaveLength(1);
  });

  it('an async interceptor maps a batch handler result: the handler acks nothing, the interceptor acks all', async () => {
    await boot([], [BatchHandler]);
    await publish(BATCH_STREAM, 'a', { n: 1 });
    await publish(BATCH_STREAM, 'b', { n: 2 });
    await waitFor(
      async () => LOG.received.length > 0 && (await pendingIds(BATCH_STREAM)).length === 0,
    );
    expect((LOG.received as number[]).reduce((a, b) => a + b, 0)).toBe(2);
  });

  it('batch mode: a guard that refuses the batch dead-letters each of its entries as rejected', async () => {
    await boot([], [BatchGuardHandler]);
    // one MULTI: the parked read is answered with both entries, so they are one batch
    const replies = (await redis
      .multi()
      .xadd(BATCH_GUARD_STREAM, '*', 'id', 'a', 'data', JSON.stringify({ n: 1 }))
      .xadd(BATCH_GUARD_STREAM, '*', 'id', 'b', 'data', JSON.stringify({ deny: true }))
      .exec())!;
    const ids = replies.map(([, id]) => id as string);
    await waitFor(() => LOG.deadLetters.length === 2);
    await waitFor(async () => (await pendingIds(BATCH_GUARD_STREAM)).length === 0);
    expect(LOG.received).toEqual([]);
    expect(LOG.deadLetters.map((d) => d.entryId).sort()).toEqual([...ids].sort());
    for (const letter of LOG.deadLetters)
      expect(letter).toMatchObject({
        reason: 'rejected',
        error: 'Forbidden resource',
        attempts: 1,
      });
  });

  it('batch mode: a filter that returns a value acks the whole batch', async () => {
    await boot([], [BatchFilterHandler]);
    await publish(BATCH_FILTER_STREAM, 'a', { n: 1 });
    await publish(BATCH_FILTER_STREAM, 'b', { n: 2 });
    await waitFor(
      async () =>
        (LOG.received as number[]).reduce((a, b) => a + b, 0) === 2 &&
        (await redis.xlen(BATCH_FILTER_STREAM)) === 2 &&
        (await pendingIds(BATCH_FILTER_STREAM)).length === 0,
    );
    expect(LOG.events.every((e) => e === 'filter:batch:echo-stream')).toBe(true);
    expect(await deadLetterFields(BATCH_FILTER_STREAM)).toEqual([]);
  });

  it('a handler with no enhancer and no parameter decorator keeps the plain inline call (a global pipe does not matter)', async () => {
    const app = await boot(
      [],
      [PlainHandler, { provide: APP_PIPE, useValue: new ValidationPipe({ transform: true }) }],
    );
    const explorer = app.get(EchoStreamExplorer);
    const definition = explorer.handlers.find((h) => h.stream === PLAIN_STREAM)!;
    expect(app.get(HandlerPipelineFactory).build(definition, false)).toBe(definition.method);
    const entryId = await publish(PLAIN_STREAM, 'x', { n: 1 });
    await waitFor(() => LOG.received.length === 1);
    expect(LOG.received).toEqual([entryId]);
  });

  it('says at bootstrap that a request-scoped global enhancer does not run for stream handlers', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    @Injectable({ scope: Scope.REQUEST })
    class PerRequestInterceptor implements NestInterceptor {
      intercept(_c: never, next: { handle(): unknown }) {
        LOG.events.push('per-request');
        return next.handle() as never;
      }
    }
    await boot([], [PlainHandler, { provide: APP_INTERCEPTOR, useClass: PerRequestInterceptor }]);
    const texts = warn.mock.calls.map((call) => String(call[0]));
    expect(
      texts.some((t) =>
        /APP_INTERCEPTOR PerRequestInterceptor is request-scoped.*does NOT run for @StreamHandler/.test(
          t,
        ),
      ),
    ).toBe(true);
  });

  it('skips, with a warning, a handler whose guard is request-scoped', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    @Injectable({ scope: Scope.REQUEST })
    class PerRequestGuard {
      canActivate(): boolean {
        return true;
      }
    }
    @Injectable()
    class GuardedHandler {
      @StreamHandler('request-scoped-guard', 'g')
      @UseGuards(PerRequestGuard)
      handle(): void {
        LOG.events.push('must not run');
      }
    }
    const app = await boot([], [GuardedHandler, PlainHandler]);
    expect(app.get(EchoStreamExplorer).handlers.map((h) => h.stream)).toEqual([PLAIN_STREAM]);
    const texts = warn.mock.calls.map((call) => String(call[0]));
    expect(
      texts.some((t) =>
        /GuardedHandler\.handle is on a request-scoped provider.*guard.*skipped/.test(t),
      ),
    ).toBe(true);
  });

  it('@Payload() rejects a non-pipe argument eagerly', () => {
    expect(() => Payload(42 as never)).toThrow(/@Payload\(\): argument 1 must be a pipe/);
  });
});
