/**
 * In-process consumer loops for the server- and network-fault tests (issue 5 scenarios 5-8 and
 * 11-15): a real `StreamConsumer` on connections made by the package's own connection factory
 * (`echo-stream-loop` / `echo-stream-shared`, `maxRetriesPerRequest: 0` on the loop's), with
 *
 * - an O_APPEND ledger in the oracle's format (`H <id> <entryId> <consumer> <attempts> <start>
 *   <end> <pid>`, see ./oracle.ts), written before the handler returns;
 * - a log of every `StreamsClient` call the loop makes (client-side command counts, for "no hot
 *   loop" while the server is down, where the server cannot count);
 * - the reconnect attempts of the loop's connection.
 *
 * The loop connection and the control connection (CLIENT UNBLOCK) may take different URLs, so a
 * TcpProxy can sit on the loop's link alone.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { StreamConsumer } from '../../../lib/consumer/loop/stream-consumer';
import type { EntryHandler } from '../../../lib/consumer/context/consumer-config';
import { resolveHandlerOptions } from '../../../lib/config/module-options';
import type { DeadLetterMessage } from '../../../lib/interfaces/dead-letter-message.interface';
import type { StreamHandlerOptions } from '../../../lib/interfaces/stream-handler-options.interface';
import type { StreamMessage } from '../../../lib/interfaces/stream-message.interface';
import { createConnection } from '../../../lib/redis/connection/redis-connection.factory';
import {
  RedisStreamsClient,
  type RedisConnection,
  type StreamsClient,
} from '../../../lib/redis/streams-client';
import { deadLetterSink, MemoryLogger } from '../../support/engine';
import { stopAllRedisServers } from '../../support/redis-server';
import { waitFor } from '../../support/wait-for';
import { OracleProducer } from './oracle';

/** One call the loop made on its `StreamsClient`. */
export interface ClientCall {
  method: keyof StreamsClient;
  args: unknown[];
  at: number;
  /** When the call settled (undefined while in flight). */
  settledAt?: number;
  /** Set when the call rejected. */
  error?: string;
}

/** Options of {@link startLoop}. */
export interface InProcessLoopOptions {
  /** URL of the loop's own connection (put a TcpProxy here to fault the loop's link alone). */
  url: string;
  /** URL of the control connection (CLIENT UNBLOCK at stop). @default url */
  controlUrl?: string;
  stream: string;
  group: string;
  /** @default 'fault-consumer' */
  consumer?: string;
  /** Handler options (module defaults of README "API" apply first). */
  options?: Partial<StreamHandlerOptions>;
  /** The handler body; the ledger line is written after it returns, before the loop acks. */
  handle?: (message: StreamMessage<unknown>) => unknown;
  /** Ledger file; one line per completed handler call. */
  ledger?: string;
  deadLetters?: Array<(letter: DeadLetterMessage) => unknown>;
  /** Deadline of non-blocking commands. @default 10000 (what the Nest glue uses) */
  deadlineMs?: number;
  /** Start the loop at once. @default true */
  autoStart?: boolean;
}

/** A handled message, as the in-memory ledger keeps it. */
export interface Handled {
  id: string;
  entryId: string;
  attempts: number;
  at: number;
}

/** A running in-process loop and what it leaves behind. */
export interface InProcessLoop {
  consumer: StreamConsumer;
  logger: MemoryLogger;
  /** Every StreamsClient call of the loop, in order. */
  calls: ClientCall[];
  /** Times of the 'reconnecting' events of the loop's connection. */
  reconnects: number[];
  /** Completed handler calls (the ledger file holds the same). */
  handled: Handled[];
  connection: RedisConnection;
  control: RedisConnection;
  /** Stops the loop (bounded by `timeoutMs`) and closes the control connection. */
  stop(timeoutMs?: number): Promise<void>;
}

const live = new Set<InProcessLoop>();

/** Builds (and by default starts) a StreamConsumer the way the Nest glue does, without Nest. */
export function startLoop(opts: InProcessLoopOptions): InProcessLoop {
  const logger = new MemoryLogger();
  const calls: ClientCall[] = [];
  const reconnects: number[] = [];
  const handled: Handled[] = [];
  const noop = (): void => undefined;
  const control = createConnection(
    { connection: opts.controlUrl ?? opts.url, cluster: undefined },
    'shared',
    noop,
  );
  const connection = createConnection({ connection: opts.url, cluster: undefined }, 'loop', noop);
  connection.on('reconnecting', () => reconnects.push(Date.now()));
  const client = recordCalls(
    new RedisStreamsClient(connection, control, opts.deadlineMs ?? 10_000),
    calls,
  );
  const consumerName = opts.consumer ?? 'fault-consumer';
  const ledger = opts.ledger;
  const userHandle = opts.handle;
  const handler: EntryHandler = {
    batch: false,
    async call(message: StreamMessage<unknown>): Promise<void> {
      const startedAt = Date.now();
      if (userHandle) await userHandle(message);
      const endedAt = Date.now();
      handled.push({
        id: message.id,
        entryId: message.entryId,
        attempts: message.attempts,
        at: endedAt,
      });
      if (ledger) {
        fs.appendFileSync(
          ledger,
          `H ${message.id} ${message.entryId} ${consumerName} ${message.attempts} ${startedAt} ${endedAt} ${process.pid}\n`,
        );
      }
    },
  };
  const consumer = new StreamConsumer({
    stream: opts.stream,
    group: opts.group,
    consumer: consumerName,
    handlerName: 'Fault.handle',
    options: resolveHandlerOptions(opts.stream, 'fault test', {}, opts.options ?? {}),
    client,
    handler,
    deadLetters: deadLetterSink(opts.deadLetters),
    logger,
  });
  const loop: InProcessLoop = {
    consumer,
    logger,
    calls,
    reconnects,
    handled,
    connection,
    control,
    async stop(timeoutMs = 1000) {
      live.delete(loop);
      await consumer.stop(timeoutMs);
      control.disconnect();
      connection.disconnect();
    },
  };
  live.add(loop);
  if (opts.autoStart !== false) consumer.start();
  return loop;
}

/** The parked read (XREADGROUP ... BLOCK) in flight now, if any. */
export function parkedRead(loop: InProcessLoop): ClientCall | undefined {
  const last = [...loop.calls].reverse().find((c) => c.method === 'readGroup');
  return last && last.args[5] !== undefined && last.settledAt === undefined ? last : undefined;
}

/**
 * Waits until the loop has a read parked that started within the last `freshMs` (so it stays
 * parked a while longer) and returns it. With `blockMs`, only a read parked for that long counts:
 * a loop parks for less when its next sweep is due sooner (the second sweep after start falls at
 * a random point of its interval), and a test that times a stall against the end of the park
 * needs the whole one.
 */
export async function waitForFreshPark(
  loop: InProcessLoop,
  freshMs = 60,
  { timeoutMs = 10_000, blockMs }: { timeoutMs?: number; blockMs?: number } = {},
): Promise<ClientCall> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const read = parkedRead(loop);
    const age = read ? Date.now() - read.at : -1;
    const whole = blockMs === undefined || read?.args[5] === blockMs;
    if (read && age <= freshMs && age >= 5 && whole) return read;
    if (Date.now() > deadline) throw new Error('waitForFreshPark: the loop never parked a read');
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Stops every loop started by {@link startLoop} and not stopped yet (for afterEach/afterAll). */
export async function stopAllLoops(): Promise<void> {
  await Promise.all([...live].map((loop) => loop.stop(500)));
}

/**
 * The hooks of a spec whose tests start their own servers: after each test every loop and every
 * redis-server stops (loops first); after the last one the ledger dirs are removed.
 */
export function stopLoopsAndServersAfterEach(): void {
  afterEach(async () => {
    await stopAllLoops();
    await stopAllRedisServers();
  });
  afterAll(() => removeLedgerDirs());
}

/**
 * A producer on `stream` that has published `count` entries, resolved once `loop` has handled
 * that many entries.
 */
export async function publishAndHandle(
  redis: Redis,
  stream: string,
  loop: InProcessLoop,
  count: number,
  message?: string,
): Promise<OracleProducer> {
  const producer = new OracleProducer(redis, stream);
  await producer.publishMany(count);
  await waitFor(() => loop.handled.length === count, { message });
  return producer;
}

/** Wraps a StreamsClient so that every method call is recorded (and its rejection). */
function recordCalls(client: RedisStreamsClient, calls: ClientCall[]): StreamsClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || prop === 'constructor') return value;
      return (...args: unknown[]) => {
        const call: ClientCall = { method: prop as keyof StreamsClient, args, at: Date.now() };
        calls.push(call);
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (result instanceof Promise) {
          result.then(
            () => (call.settledAt = Date.now()),
            (err: unknown) => {
              call.settledAt = Date.now();
              call.error = err instanceof Error ? err.message : String(err);
            },
          );
        }
        return result;
      };
    },
  }) as unknown as StreamsClient;
}

// ---------------------------------------------------------------------------------------------
// What Redis holds
// ---------------------------------------------------------------------------------------------

/** XPENDING count of a group. */
export async function pendingCount(redis: Redis, stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

/** One line of INFO commandstats. */
export interface CommandStat {
  calls: number;
  rejected: number;
  failed: number;
}

/** INFO commandstats as a map `xgroup|create` -> figures (absent: never called since RESETSTAT). */
export async function commandStats(redis: Redis): Promise<Map<string, CommandStat>> {
  const text = await redis.info('commandstats');
  const out = new Map<string, CommandStat>();
  for (const line of text.split('\r\n')) {
    const m = /^cmdstat_([^:]+):(.*)$/.exec(line);
    if (!m) continue;
    const fields = new Map(m[2].split(',').map((kv) => kv.split('=') as [string, string]));
    out.set(m[1], {
      calls: Number(fields.get('calls') ?? 0),
      rejected: Number(fields.get('rejected_calls') ?? 0),
      failed: Number(fields.get('failed_calls') ?? 0),
    });
  }
  return out;
}

/** Calls (accepted + rejected) of one command in a commandstats map. */
export function attempts(stats: Map<string, CommandStat>, command: string): number {
  const s = stats.get(command);
  return s ? s.calls + s.rejected : 0;
}

/** One field of INFO (any section), as a number. */
export async function infoNumber(redis: Redis, section: string, field: string): Promise<number> {
  const text = await redis.info(section);
  const m = new RegExp(`^${field}:(\\S+)`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/** CLIENT LIST rows with their fields. */
export async function clientList(redis: Redis): Promise<Array<Record<string, string>>> {
  const text = String(await redis.call('CLIENT', 'LIST'));
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) =>
      Object.fromEntries(
        line
          .trim()
          .split(' ')
          .map((kv) => splitOnce(kv, '=')),
      ),
    );
}

function splitOnce(text: string, sep: string): [string, string] {
  const i = text.indexOf(sep);
  return i < 0 ? [text, ''] : [text.slice(0, i), text.slice(i + 1)];
}

/** The `retrying in N ms` delays the loop logged, in order. */
export function retryDelays(logger: MemoryLogger): number[] {
  return logger.lines
    .map((line) => /retrying in (\d+) ms/.exec(line)?.[1])
    .filter((d): d is string => d !== undefined)
    .map(Number);
}

// ---------------------------------------------------------------------------------------------
// Files, logs, reports
// ---------------------------------------------------------------------------------------------

const dirs: string[] = [];

/** Stream names `<prefix>-<what>-<pid>-<n>`, a new one on every call. */
export function streamNames(prefix: string): (what: string) => string {
  let n = 0;
  return (what) => `${prefix}-${what}-${process.pid}-${++n}`;
}

/** A fresh ledger path in a temp dir removed by {@link removeLedgerDirs}. */
export function ledgerFile(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-stream-faults-'));
  dirs.push(dir);
  return path.join(dir, `${name}.ledger`);
}

/** Removes every dir made by {@link ledgerFile}. */
export function removeLedgerDirs(): void {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** One line to stderr (not through Jest's console): what a faulted run measured. */
export function report(test: string, text: string): void {
  if (process.env.FAULT_REPORT !== '0') process.stderr.write(`  [fault] ${test}: ${text}\n`);
}
