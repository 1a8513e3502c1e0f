import type { DeadLetterMessage } from '../../interfaces/dead-letter-message.interface';
import type { BatchAcks, StreamMessage } from '../../interfaces/stream-message.interface';

/** What the engine logs through; Nest's `Logger` fits, so does `console`. */
export interface ConsumerLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string, stack?: string): void;
  debug?(message: string): void;
}

/** The user's method, already bound to its instance. */
export type EntryHandler =
  | { batch: false; call(message: StreamMessage<unknown>): unknown }
  | { batch: true; call(messages: StreamMessage<unknown>[]): BatchAcks | Promise<BatchAcks> };

/** Where dead letters go after the copy: the matching `@DeadLetter` methods. */
export interface DeadLetterSink {
  /** How many handlers match this loop's stream and group. */
  readonly handlerCount: number;
  /** Calls every matching handler; rejects when one fails (the entry then stays pending). */
  deliver(letter: DeadLetterMessage): Promise<void>;
}

/**
 * Runs handler calls inside trace spans (OpenTelemetry, when installed; docs/observability.md
 * "Tracing").
 */
export interface EntryTracing {
  /** Called for each message built from an entry, with the entry's raw fields (trace context). */
  remember(message: StreamMessage<unknown>, fields: readonly string[]): void;
  /** The handler, each call of it inside a span. */
  wrap(handler: EntryHandler): EntryHandler;
}
