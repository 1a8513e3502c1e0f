import { Redis } from 'ioredis';
import { resolveHandlerOptions } from '../../lib/config/module-options';
import { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import type {
  ConsumerLogger,
  DeadLetterSink,
  EntryHandler,
} from '../../lib/consumer/context/consumer-config';
import { RedisStreamsClient } from '../../lib/redis/streams-client';
import { createConnection } from '../../lib/redis/connection/redis-connection.factory';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import type { DeadLetterMessage } from '../../lib/interfaces/dead-letter-message.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { ServerFeatureMode } from '../../lib/interfaces/redis-server.interface';

/** A logger that keeps lines, for assertions (and prints errors when DEBUG_TESTS is set). */
export class MemoryLogger implements ConsumerLogger {
  readonly lines: string[] = [];
  log(message: string): void {
    this.lines.push(`log ${message}`);
  }
  warn(message: string): void {
    this.lines.push(`warn ${message}`);
    if (process.env.DEBUG_TESTS) console.warn(message);
  }
  error(message: string): void {
    this.lines.push(`error ${message}`);
    if (process.env.DEBUG_TESTS) console.error(message);
  }
  debug(message: string): void {
    this.lines.push(`debug ${message}`);
  }
  has(pattern: RegExp): boolean {
    return this.lines.some((line) => pattern.test(line));
  }
}

/** The @DeadLetter side of a test consumer: every letter goes to each of `sinks`, in order. */
export function deadLetterSink(
  sinks: ReadonlyArray<(letter: DeadLetterMessage) => unknown> = [],
): DeadLetterSink {
  return {
    handlerCount: sinks.length,
    async deliver(letter) {
      for (const sink of sinks) await sink(letter);
    },
  };
}

/** Options of a consumer made for a test. */
export interface TestConsumerOptions {
  url: string;
  stream: string;
  group: string;
  consumer?: string;
  handle?: (message: StreamMessage<unknown>) => unknown;
  batchHandle?: (messages: StreamMessage<unknown>[]) => unknown;
  options?: Partial<StreamHandlerOptions>;
  deadLetters?: Array<(letter: DeadLetterMessage) => unknown>;
  /** The module option `serverFeatures` of the loop's client (default `'auto'`). */
  serverFeatures?: ServerFeatureMode;
  /** Where in its interval the second sweep falls (0..1; `ConsumerConfig.sweepPhase`). */
  sweepPhase?: number;
}

/** A StreamConsumer on its own connections to a test server, plus the logger it writes to. */
export function makeConsumer(opts: TestConsumerOptions): {
  consumer: StreamConsumer;
  logger: MemoryLogger;
  control: Redis;
} {
  const logger = new MemoryLogger();
  const control = new Redis(opts.url, { lazyConnect: false });
  control.on('error', () => undefined);
  // the loop connection exactly as the module opens it (protocol, retries, reconnect delays)
  const loopConnection = createConnection(
    { connection: opts.url, cluster: undefined },
    'loop',
    () => undefined,
  );
  const client = new RedisStreamsClient(loopConnection, control, 2000, opts.serverFeatures);
  const handler: EntryHandler = opts.batchHandle
    ? { batch: true, call: opts.batchHandle as never }
    : { batch: false, call: opts.handle ?? (() => undefined) };
  const consumer = new StreamConsumer({
    stream: opts.stream,
    group: opts.group,
    consumer: opts.consumer ?? 'test-consumer',
    handlerName: 'Test.handle',
    options: resolveHandlerOptions(opts.stream, 'test', {}, { blockMs: 200, ...opts.options }),
    client,
    handler,
    deadLetters: deadLetterSink(opts.deadLetters),
    logger,
    sweepPhase: opts.sweepPhase,
  });
  return { consumer, logger, control };
}

/** A consumer {@link StartedConsumers.start} made and started. */
export interface StartedConsumer {
  consumer: StreamConsumer;
  logger: MemoryLogger;
}

/** The consumers a spec starts on one server, stopped together after each test. */
export interface StartedConsumers {
  /** Makes a consumer on the server ({@link makeConsumer}) and starts it. */
  start(opts: Omit<TestConsumerOptions, 'url'>): StartedConsumer;
  /** Stops every consumer started since the last call, and closes its control connection. */
  stopAll(): Promise<void>;
}

/** {@link StartedConsumers} on the server at `url()` (read at each start: after `beforeAll`). */
export function startedConsumers(url: () => string): StartedConsumers {
  const running: Array<{ consumer: StreamConsumer; control: Redis }> = [];
  return {
    start: (opts) => {
      const made = makeConsumer({ url: url(), ...opts });
      running.push(made);
      made.consumer.start();
      return made;
    },
    stopAll: async () => {
      await Promise.all(
        running.splice(0).map(async (c) => {
          await c.consumer.stop(2000);
          c.control.disconnect();
        }),
      );
    },
  };
}
