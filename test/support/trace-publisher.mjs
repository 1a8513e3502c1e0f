/**
 * A traced publisher as a separate OS process (docs/observability.md "Tracing" tracing tests): an OpenTelemetry SDK with
 * an in-memory exporter and the W3C propagator, a Nest app context with the BUILT package
 * (`dist/index.js`), and one `StreamProducer.publish` inside a parent span `POST /orders`.
 *
 *   node test/support/trace-publisher.mjs <redisUrl> <stream> <codec> <payloadJson>
 *
 * Prints one line of JSON: `{ receipt, spans: [{ name, kind, traceId, spanId, parentSpanId,
 * attributes }] }`, then exits 0.
 */
import 'reflect-metadata';
import { createRequire } from 'node:module';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

const require = createRequire(import.meta.url);
const { EchoStreamModule, StreamProducer } = require('../../dist/index.js');
const { Module } = await import('@nestjs/common');
const { NestFactory } = await import('@nestjs/core');

const [url, stream, codec, payloadJson] = process.argv.slice(2);
const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

class PublisherModule {}
Module({ imports: [EchoStreamModule.forRoot({ connection: url, autoStart: false })] })(
  PublisherModule,
);
const app = await NestFactory.createApplicationContext(PublisherModule, { logger: false });
const producer = app.get(StreamProducer);
const receipt = await trace
  .getTracer('trace-publisher')
  .startActiveSpan('POST /orders', async (span) => {
    try {
      return await producer.publish(stream, JSON.parse(payloadJson), { codec });
    } finally {
      span.end();
    }
  });
await app.close();
const spans = exporter.getFinishedSpans().map((s) => ({
  name: s.name,
  kind: s.kind,
  traceId: s.spanContext().traceId,
  spanId: s.spanContext().spanId,
  parentSpanId: s.parentSpanContext?.spanId,
  attributes: s.attributes,
}));
process.stdout.write(`${JSON.stringify({ receipt, spans })}\n`);
