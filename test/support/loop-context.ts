/**
 * A `LoopContext` for unit tests of the loop's collaborators: real counters, a logger that keeps
 * lines, a clock the test moves (or `Date.now`, to agree with the fake client's idle times), and
 * a stop switch the test flips.
 */
import { ConsumerCounters } from '../../lib/consumer/context/consumer-counters';
import type { ConsumerLogger } from '../../lib/consumer/context/consumer-config';
import type { LoopContext } from '../../lib/consumer/context/loop-context';
import { resolveHandlerOptions } from '../../lib/config/module-options';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';

export const S = 'orders';
export const G = 'g';
export const C = 'c1';

/** A logger that keeps lines, for assertions. */
export class LineLogger implements ConsumerLogger {
  readonly lines: string[] = [];
  log(message: string): void {
    this.lines.push(`log ${message}`);
  }
  warn(message: string): void {
    this.lines.push(`warn ${message}`);
  }
  error(message: string): void {
    this.lines.push(`error ${message}`);
  }
  debug(message: string): void {
    this.lines.push(`debug ${message}`);
  }
  has(pattern: RegExp): boolean {
    return this.lines.some((line) => pattern.test(line));
  }
}

/** A clock a test moves by hand. */
export interface ManualClock {
  now(): number;
  advance(ms: number): void;
}

export function manualClock(start = 1_000_000): ManualClock {
  let now = start;
  return { now: () => now, advance: (ms) => void (now += ms) };
}

export interface TestLoop {
  context: LoopContext;
  counters: ConsumerCounters;
  logger: LineLogger;
  /** Flips `isStopping()` and aborts the signal. */
  stop(): void;
  /** Flips `isAbandoned()`. */
  abandon(): void;
}

export function testLoop(
  options: Partial<StreamHandlerOptions> = {},
  now: () => number = Date.now,
): TestLoop {
  const logger = new LineLogger();
  const counters = new ConsumerCounters({ stream: S, group: G, consumer: C, handler: 'T.h' }, now);
  const abort = new AbortController();
  let stopping = false;
  let abandoned = false;
  const context: LoopContext = {
    stream: S,
    group: G,
    consumer: C,
    handlerName: 'T.h',
    where: `T.h on ${S}/${G}`,
    options: resolveHandlerOptions(S, 'test', {}, options),
    logger,
    counters,
    signal: abort.signal,
    now,
    isStopping: () => stopping,
    isAbandoned: () => abandoned,
  };
  return {
    context,
    counters,
    logger,
    stop: () => {
      stopping = true;
      abort.abort();
    },
    abandon: () => void (abandoned = true),
  };
}

/** Lets pending promise callbacks and timers of `ms` run. */
export const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
