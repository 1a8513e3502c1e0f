import type { EntryHandler, EntryTracing } from '../consumer';
import type { StreamMessage } from '../interfaces/stream-message.interface';
import { errorStack, errorText } from '../codec/codecs';
import { TRACER_NAME, tracingOff, type Otel } from './otel-api';
import { traceCarrierOf } from '../codec/trace-fields';

type Span = ReturnType<ReturnType<Otel['trace']['getTracer']>['startSpan']>;
type Context = ReturnType<Otel['context']['active']>;

/**
 * CONSUMER spans for one loop (docs/observability.md "Tracing"), after the OpenTelemetry messaging
 * conventions: each handler call runs inside a span `process <stream>` whose parent is the context
 * the publisher injected into the entry; a batch-mode call gets one span with a link to each
 * entry's context. A throw records the exception and sets status ERROR (internal).
 */
export class ConsumerTracing implements EntryTracing {
  /** Trace fields of the messages in flight, by message (only entries that carry some). */
  private readonly carriers = new WeakMap<object, Record<string, string>>();

  constructor(
    private readonly otel: Otel,
    private readonly stream: string,
    private readonly group: string,
  ) {}

  remember(message: StreamMessage<unknown>, fields: readonly string[]): void {
    if (tracingOff(this.otel)) return;
    const carrier = traceCarrierOf(fields);
    if (carrier) this.carriers.set(message, carrier);
  }

  wrap(handler: EntryHandler): EntryHandler {
    if (handler.batch) {
      const inner = handler.call;
      return { batch: true, call: (messages) => this.batchCall(messages, () => inner(messages)) };
    }
    const inner = handler.call;
    return { batch: false, call: (message) => this.entryCall(message, () => inner(message)) };
  }

  private entryCall(message: StreamMessage<unknown>, call: () => unknown): unknown {
    if (tracingOff(this.otel)) return call();
    const { context, propagation, ROOT_CONTEXT } = this.otel;
    const carrier = this.carriers.get(message);
    const parent = carrier ? propagation.extract(ROOT_CONTEXT, carrier) : context.active();
    const span = this.start(parent, undefined);
    if (span.isRecording()) {
      span.setAttributes({
        'messaging.message.id': message.id,
        'messaging.redis.entry_id': message.entryId,
        'messaging.redis.delivery_count': message.attempts,
      });
    }
    return this.runIn(span, parent, call);
  }

  private batchCall<T>(messages: StreamMessage<unknown>[], call: () => T): T {
    if (tracingOff(this.otel)) return call();
    const { context, propagation, trace, ROOT_CONTEXT } = this.otel;
    const links = [];
    for (const message of messages) {
      const carrier = this.carriers.get(message);
      const linked = carrier && trace.getSpanContext(propagation.extract(ROOT_CONTEXT, carrier));
      if (linked) links.push({ context: linked });
    }
    const parent = context.active();
    const span = this.start(parent, links);
    if (span.isRecording()) span.setAttribute('messaging.batch.message_count', messages.length);
    return this.runIn(span, parent, call) as T;
  }

  private start(
    parent: Context,
    links: Array<{ context: ReturnType<Span['spanContext']> }> | undefined,
  ): Span {
    const { trace, SpanKind } = this.otel;
    return trace.getTracer(TRACER_NAME).startSpan(
      `process ${this.stream}`,
      {
        kind: SpanKind.CONSUMER,
        links,
        attributes: {
          'messaging.system': 'redis',
          'messaging.operation.type': 'process',
          'messaging.operation.name': 'process',
          'messaging.destination.name': this.stream,
          'messaging.consumer.group.name': this.group,
        },
      },
      parent,
    );
  }

  /** Runs `call` with the span active; ends the span when the call settles (sync or async). */
  private runIn(span: Span, parent: Context, call: () => unknown): unknown {
    const { context, trace } = this.otel;
    return context.with(trace.setSpan(parent, span), () => {
      let result: unknown;
      try {
        result = call();
      } catch (err) {
        this.fail(span, err);
        throw err;
      }
      if (!isThenable(result)) {
        span.end();
        return result;
      }
      return Promise.resolve(result).then(
        (value) => {
          span.end();
          return value;
        },
        (err: unknown) => {
          this.fail(span, err);
          throw err;
        },
      );
    });
  }

  /**
   * Marks the span failed. The exception is recorded through the same bounded printers as the
   * logs and the dead letter (at most 8 KiB of message and of stack; never a throw of its own), so
   * a handler that throws a megabyte does not hand a megabyte to the exporter.
   */
  private fail(span: Span, err: unknown): void {
    const message = errorText(err);
    span.recordException({
      name: err instanceof Error ? errorText(err.name) : 'Error',
      message,
      stack: errorStack(err),
    });
    span.setStatus({ code: this.otel.SpanStatusCode.ERROR, message });
    span.end();
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
