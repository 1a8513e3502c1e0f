/**
 * OpenTelemetry tracing (docs/observability.md "Tracing") on a real redis-server, publisher and consumer in two separate
 * processes: the consumer's `process <stream>` span continues the publisher's trace (same trace
 * id, parent = the `send <stream>` PRODUCER span), user spans nest under it, a throw is recorded,
 * batch mode links every entry, and the trace fields never reach a payload but stay on dead-letter
 * copies.
 */
import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Injectable, UseGuards, type INestApplication } from '@nestjs/common';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { EchoStreamModule, StreamHandler, StreamProducer, type StreamMessage } from '../../lib';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const run = promisify(execFile);
const exporter = new InMemorySpanExporter();
let server: RedisServer;
let redis: Redis;
let app: INestApplication | undefined;

const SEEN: Array<{ payload: unknown; activeSpanId: string | undefined; userParent?: string }> = [];
const BATCHES: number[] = [];

@Injectable()
class TracedHandlers {
  @StreamHandler('traced', 'g', { blockMs: 100, claimIntervalMs: 100 })
  handle(message: StreamMessage<Record<string, unknown>>): void {
    const active = trace.getActiveSpan()?.spanContext().spanId;
    const user = trace.getTracer('test').startSpan('charge card');
    SEEN.push({ payload: message.payload, activeSpanId: active });
    user.end();
    if (message.payload.fail) throw new Error('card declined');
    if (message.payload.huge) throw new Error('x'.repeat(1024 * 1024));
  }

  @StreamHandler('traced-fields', 'g', { codec: 'fields', blockMs: 100, claimIntervalMs: 100 })
  fields(message: StreamMessage<Record<string, string>>): void {
    SEEN.push({
      payload: message.payload,
      activeSpanId: trace.getActiveSpan()?.spanContext().spanId,
    });
  }

  @StreamHandler('traced-batch', 'g', { batch: true, blockMs: 100, claimIntervalMs: 100 })
  batch(messages: StreamMessage<unknown>[]): StreamMessage<unknown>[] {
    BATCHES.push(messages.length);
    return messages;
  }

  @StreamHandler('traced-denied', 'g', { blockMs: 100, claimIntervalMs: 100 })
  @UseGuards({ canActivate: () => false })
  denied(): void {}
}

beforeAll(async () => {
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await stopAllRedisServers();
  trace.disable();
  context.disable();
  propagation.disable();
});
beforeEach(async () => {
  await redis.flushall();
  exporter.reset();
  SEEN.length = 0;
  BATCHES.length = 0;
});
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function boot(): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [EchoStreamModule.forRoot({ connection: server.url, consumerName: 'e2e' })],
    providers: [TracedHandlers],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

interface ChildSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
}

/** Publishes from another OS process with its own SDK; returns its receipt and finished spans. */
async function publishFromChild(
  stream: string,
  payload: unknown,
  codec = 'json',
): Promise<{ receipt: { id: string; entryId: string }; spans: ChildSpan[] }> {
  const { stdout } = await run(process.execPath, [
    'test/support/trace-publisher.mjs',
    server.url,
    stream,
    codec,
    JSON.stringify(payload),
  ]);
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

function processSpans(stream: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.name === `process ${stream}`);
}

describe('OpenTelemetry tracing', () => {
  it('continues the publisher trace across processes: CONSUMER span child of the PRODUCER span, user spans nest under it', async () => {
    await boot();
    const { receipt, spans } = await publishFromChild('traced', { order: 7 });
    const send = spans.find((s) => s.name === 'send traced')!;
    const http = spans.find((s) => s.name === 'POST /orders')!;
    expect(send).toMatchObject({
      kind: SpanKind.PRODUCER,
      traceId: http.traceId,
      parentSpanId: http.spanId,
      attributes: {
        'messaging.system': 'redis',
        'messaging.operation.type': 'send',
        'messaging.destination.name': 'traced',
        'messaging.message.id': receipt.id,
      },
    });
    await waitFor(() => processSpans('traced').length === 1);
    const [consumer] = processSpans('traced');
    expect(consumer.kind).toBe(SpanKind.CONSUMER);
    expect(consumer.spanContext().traceId).toBe(send.traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(send.spanId);
    expect(consumer.attributes).toMatchObject({
      'messaging.system': 'redis',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'traced',
      'messaging.consumer.group.name': 'g',
      'messaging.message.id': receipt.id,
      'messaging.redis.delivery_count': 1,
    });
    expect(consumer.status.code).not.toBe(SpanStatusCode.ERROR);
    // the handler ran inside the span, and a span it started is its child
    expect(SEEN).toEqual([{ payload: { order: 7 }, activeSpanId: consumer.spanContext().spanId }]);
    const user = exporter.getFinishedSpans().find((s) => s.name === 'charge card')!;
    expect(user.parentSpanContext?.spanId).toBe(consumer.spanContext().spanId);
    expect(user.spanContext().traceId).toBe(send.traceId);
    // the entry carries the trace context next to the payload, not in it
    const [[, fields]] = await redis.xrange('traced', '-', '+');
    expect(fields).toContain('traceparent');
  });

  it('no trace field reaches a payload, with the fields codec either', async () => {
    await boot();
    await publishFromChild('traced-fields', { sku: 'A-1', qty: '2' }, 'fields');
    await waitFor(() => SEEN.length === 1);
    expect(SEEN[0].payload).toEqual({ sku: 'A-1', qty: '2' });
  });

  it('a throw sets status ERROR and records the exception', async () => {
    await boot();
    await publishFromChild('traced', { fail: true });
    await waitFor(() => processSpans('traced').length === 1);
    const [span] = processSpans('traced');
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'card declined' });
    expect(span.events.map((e) => [e.name, e.attributes?.['exception.message']])).toEqual([
      ['exception', 'card declined'],
    ]);
  });

  it('a megabyte throw reaches the span cut to 8 KiB (status, exception message and stack)', async () => {
    await boot();
    await publishFromChild('traced', { huge: true });
    await waitFor(() => processSpans('traced').length === 1);
    const [span] = processSpans('traced');
    const cut = /\.\.\. \[cut: \d+ more bytes\]/;
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(Buffer.byteLength(span.status.message ?? '')).toBeLessThanOrEqual(8192);
    expect(span.status.message).toMatch(cut);
    const [event] = span.events;
    const exceptionMessage = String(event.attributes?.['exception.message']);
    const exceptionStack = String(event.attributes?.['exception.stacktrace']);
    expect(Buffer.byteLength(exceptionMessage)).toBeLessThanOrEqual(8192);
    expect(exceptionMessage).toMatch(cut);
    expect(Buffer.byteLength(exceptionStack)).toBeLessThanOrEqual(8192);
    expect(exceptionStack).toContain('    at ');
  });

  it('batch mode: one span per call, linked to each entry context', async () => {
    const app = await boot();
    const producer = app.get(StreamProducer);
    const tracer = trace.getTracer('test');
    const senders: string[] = [];
    for (let i = 0; i < 3; i++) {
      await tracer.startActiveSpan(`request ${i}`, async (span) => {
        await producer.publish('traced-batch', { i });
        senders.push(span.spanContext().traceId);
        span.end();
      });
    }
    await waitFor(() => BATCHES.reduce((a, b) => a + b, 0) === 3);
    const spans = processSpans('traced-batch');
    const linkedTraces = spans.flatMap((s) => s.links.map((l) => l.context.traceId));
    expect(linkedTraces.sort()).toEqual([...senders].sort());
    expect(
      spans.reduce((n, s) => n + Number(s.attributes['messaging.batch.message_count']), 0),
    ).toBe(3);
  });

  it('publishMany: one PRODUCER span for the call, its context injected into every entry', async () => {
    const app = await boot();
    await app.get(StreamProducer).publishMany('traced-many', [{ a: 1 }, { a: 2 }]);
    const sends = exporter.getFinishedSpans().filter((s) => s.name === 'send traced-many');
    expect(sends).toHaveLength(1);
    expect(sends[0].kind).toBe(SpanKind.PRODUCER);
    expect(sends[0].attributes['messaging.batch.message_count']).toBe(2);
    const { traceId, spanId } = sends[0].spanContext();
    const entries = await redis.xrange('traced-many', '-', '+');
    expect(entries.map(([, f]) => f[f.indexOf('traceparent') + 1])).toEqual([
      `00-${traceId}-${spanId}-01`,
      `00-${traceId}-${spanId}-01`,
    ]);
  });

  it('dead-letter copies keep the trace fields', async () => {
    await boot();
    await publishFromChild('traced-denied', { n: 1 });
    await waitFor(async () => (await redis.xlen('traced-denied:dlq')) === 1);
    const [[, fields]] = await redis.xrange('traced-denied:dlq', '-', '+');
    const record: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2) record[fields[i]] = fields[i + 1];
    expect(record.dlq_reason).toBe('rejected');
    expect(record.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    await waitFor(() => processSpans('traced-denied').length === 1);
    expect(processSpans('traced-denied')[0].status.code).toBe(SpanStatusCode.ERROR);
  });
});
