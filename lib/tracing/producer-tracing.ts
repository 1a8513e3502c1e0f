import { TRACER_NAME, tracingOff, type Otel } from './otel-api';

/**
 * PRODUCER spans for `StreamProducer` (docs/observability.md "Tracing"), following the
 * OpenTelemetry messaging conventions: one span `send <stream>` per publish call (one for a whole
 * `publishMany`), and the context of that span injected into every entry with the global propagator
 * as the fields `traceparent` and `tracestate` (internal).
 */
export class ProducerTracing {
  constructor(private readonly otel: Otel) {}

  /**
   * Runs `write` inside a PRODUCER span; `write` gets the trace fields to append to each entry
   * (none when no propagator is registered or the span is not sampled and carries no context).
   */
  async send<T extends ReadonlyArray<{ id: string; entryId: string }>>(
    stream: string,
    count: number,
    write: (traceFields: readonly string[]) => Promise<T>,
  ): Promise<T> {
    if (tracingOff(this.otel)) return write([]);
    const { trace, context, propagation, SpanKind, SpanStatusCode } = this.otel;
    const span = trace.getTracer(TRACER_NAME).startSpan(`send ${stream}`, {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': 'redis',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'messaging.destination.name': stream,
        ...(count > 1 ? { 'messaging.batch.message_count': count } : {}),
      },
    });
    const active = trace.setSpan(context.active(), span);
    const carrier: Record<string, string> = {};
    propagation.inject(active, carrier);
    const fields: string[] = [];
    if (carrier.traceparent) fields.push('traceparent', carrier.traceparent);
    if (carrier.tracestate) fields.push('tracestate', carrier.tracestate);
    try {
      const receipts = await context.with(active, () => write(fields));
      if (receipts.length === 1) {
        span.setAttribute('messaging.message.id', receipts[0].id);
        span.setAttribute('messaging.redis.entry_id', receipts[0].entryId);
      }
      return receipts;
    } catch (err) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
      throw err;
    } finally {
      span.end();
    }
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
