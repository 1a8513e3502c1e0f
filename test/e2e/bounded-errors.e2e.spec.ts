/**
 * Bounded error text (issue 22, "unbounded answers") on a real redis-server: a handler that throws
 * a megabyte does not put a megabyte in its dead letter, in the `@DeadLetter` method's letter, in
 * the consumer's `lastError` or in any log line (message or stack). Each text is cut at a
 * character boundary and says how many bytes it left out; the entry is still acked and
 * dead-lettered exactly once. Paths covered: retries exhausted (`max_deliveries`), a multi-byte
 * message, a guard's refusal (`rejected`, through the Nest pipeline) and a codec's decode error.
 */
import 'reflect-metadata';
import {
  ForbiddenException,
  Injectable,
  Logger,
  UseGuards,
  type CanActivate,
} from '@nestjs/common';
import { jest } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  ConsumerStats,
  DeadLetter,
  EchoStreamModule,
  StreamHandler,
  type DeadLetterMessage,
  type StreamCodec,
} from '../../lib';
import type { INestApplication } from '@nestjs/common';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const MiB = 1024 * 1024;
const CAP = 8192;
/** A log line may carry a cut text plus its context (handler, stream, group, entry id). */
const LONGEST_LOG_LINE = 16 * 1024;

const ASCII_STREAM = 'bounded-ascii';
const EMOJI_STREAM = 'bounded-emoji';
const GUARD_STREAM = 'bounded-guard';
const DECODE_STREAM = 'bounded-decode';

/** One MiB of text: ASCII (one byte each) or emoji (four bytes, a surrogate pair, each). */
const HUGE_ASCII = 'x'.repeat(MiB);
const HUGE_EMOJI = '\u{1F600}'.repeat(MiB / 4);

const letters: DeadLetterMessage[] = [];

@Injectable()
class RefuseEverything implements CanActivate {
  canActivate(): boolean {
    throw new ForbiddenException(HUGE_ASCII);
  }
}

const refusingCodec: StreamCodec<unknown> = {
  encode: (payload) => ({ data: JSON.stringify(payload) }),
  decode: () => {
    throw new Error(HUGE_EMOJI);
  },
};

@Injectable()
class HugeErrorHandlers {
  @StreamHandler(ASCII_STREAM, 'g', { maxDeliveries: 2, retry: { type: 'fixed', delayMs: 50 } })
  ascii(): void {
    throw new Error(HUGE_ASCII);
  }

  @StreamHandler(EMOJI_STREAM, 'g', { maxDeliveries: 1 })
  emoji(): void {
    throw new Error(HUGE_EMOJI);
  }

  @StreamHandler(GUARD_STREAM, 'g')
  @UseGuards(RefuseEverything)
  guarded(): void {
    throw new Error('a refused entry never reaches the method');
  }

  @StreamHandler(DECODE_STREAM, 'g', { codec: refusingCodec })
  decoded(): void {
    throw new Error('an undecodable entry never reaches the method');
  }

  @DeadLetter()
  onDead(letter: DeadLetterMessage): void {
    letters.push(letter);
  }
}

let server: RedisServer;
let redis: Redis;
let app: INestApplication | undefined;
/** Every text handed to a Nest Logger (message, stack, context) while a test runs. */
let logged: string[];

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await stopAllRedisServers();
});
beforeEach(async () => {
  await redis.flushall();
  letters.length = 0;
  logged = [];
  for (const level of ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'] as const) {
    jest.spyOn(Logger.prototype, level).mockImplementation((...args: unknown[]) => {
      for (const arg of args) if (typeof arg === 'string') logged.push(arg);
    });
  }
});
afterEach(async () => {
  await app?.close();
  app = undefined;
  jest.restoreAllMocks();
});

async function boot(): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      EchoStreamModule.forRoot({
        connection: server.url,
        consumerName: 'e2e',
        shutdownTimeoutMs: 2000,
      }),
    ],
    providers: [HugeErrorHandlers, RefuseEverything],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

async function publish(stream: string): Promise<string> {
  return (await redis.xadd(stream, '*', 'id', `${stream}-1`, 'data', '{"n":1}')) as string;
}

async function deadLetters(stream: string): Promise<Array<Record<string, string>>> {
  const entries = await redis.xrange(`${stream}:dlq`, '-', '+');
  return entries.map(([, fields]) => {
    const record: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2) record[fields[i]] = fields[i + 1];
    return record;
  });
}

async function pendingCount(stream: string): Promise<number> {
  const [count] = (await redis.xpending(stream, 'g')) as [number, ...unknown[]];
  return Number(count);
}

/**
 * A text cut from `whole`: at most CAP UTF-8 bytes, marker included; a head of `whole` (no
 * character split, so no U+FFFD) followed by the marker naming exactly the bytes left out.
 */
function expectCutFrom(text: string | undefined, whole: string, prefix = ''): void {
  expect(typeof text).toBe('string');
  const got = text as string;
  expect(Buffer.byteLength(got, 'utf8')).toBeLessThanOrEqual(CAP);
  expect(got).not.toContain('\uFFFD');
  const marked = /^([\s\S]*)\.\.\. \[cut: (\d+) more bytes\]$/.exec(got);
  expect(marked).not.toBeNull();
  const [, head, leftOut] = marked as RegExpExecArray;
  expect(head.startsWith(prefix)).toBe(true);
  expect(whole.startsWith(head.slice(prefix.length))).toBe(true);
  expect(Buffer.byteLength(head, 'utf8') + Number(leftOut)).toBe(
    Buffer.byteLength(prefix + whole, 'utf8'),
  );
  // the cut keeps as much as fits: the head is not a stub
  expect(Buffer.byteLength(head, 'utf8')).toBeGreaterThan(CAP - 64);
}

function expectNoLongLogLine(): void {
  expect(logged.length).toBeGreaterThan(0);
  const longest = Math.max(...logged.map((text) => Buffer.byteLength(text, 'utf8')));
  expect(longest).toBeLessThanOrEqual(LONGEST_LOG_LINE);
}

/** The dead letter arrived, the entry left the PEL; a short wait shows no second copy follows. */
async function deadLetteredOnce(stream: string, entryId: string): Promise<Record<string, string>> {
  await waitFor(async () => (await deadLetters(stream)).length > 0 && letters.length > 0, {
    message: `${stream}: dead letter written and delivered`,
  });
  await waitFor(async () => (await pendingCount(stream)) === 0, { message: `${stream}: acked` });
  await sleep(300);
  const copies = await deadLetters(stream);
  expect(copies).toHaveLength(1);
  expect(copies[0].dlq_entry_id).toBe(entryId);
  expect(letters.filter((l) => l.stream === stream)).toHaveLength(1);
  expect(await pendingCount(stream)).toBe(0);
  return copies[0];
}

describe('a handler error of one megabyte', () => {
  it('retries exhausted: the dead letter, the letter, lastError and every log line carry a cut of 8 KiB', async () => {
    const app = await boot();
    const entryId = await publish(ASCII_STREAM);
    const copy = await deadLetteredOnce(ASCII_STREAM, entryId);
    expect(copy.dlq_reason).toBe('max_deliveries');
    expectCutFrom(copy.dlq_error, HUGE_ASCII);
    expect(copy.dlq_error).toMatch(/\.\.\. \[cut: \d+ more bytes\]$/);
    expectCutFrom(letters[0].error, HUGE_ASCII);
    const snapshot = app.get(ConsumerStats).get(ASCII_STREAM, 'g');
    expectCutFrom(snapshot?.lastError ?? undefined, HUGE_ASCII);
    // both failures were logged, each with its stack (the frames kept, the message cut)
    const failures = logged.filter((t) => t.includes(`failed on entry ${entryId}`));
    expect(failures).toHaveLength(2);
    const stacks = logged.filter((t) => t.startsWith('Error: xxx'));
    expect(stacks).toHaveLength(2);
    for (const stack of stacks) {
      expect(Buffer.byteLength(stack, 'utf8')).toBeLessThanOrEqual(CAP);
      expect(stack).toMatch(/\.\.\. \[cut: \d+ more bytes\]\n\s+at /);
    }
    expectNoLongLogLine();
  });

  it('of multi-byte characters: cut between two characters, never inside a surrogate pair', async () => {
    await boot();
    const entryId = await publish(EMOJI_STREAM);
    const copy = await deadLetteredOnce(EMOJI_STREAM, entryId);
    expectCutFrom(copy.dlq_error, HUGE_EMOJI);
    expectCutFrom(letters[0].error, HUGE_EMOJI);
    // an emoji is 4 bytes: the head is a whole number of them
    const head = letters[0].error!.replace(/\.\.\. \[cut: \d+ more bytes\]$/, '');
    expect(Buffer.byteLength(head, 'utf8') % 4).toBe(0);
    expectNoLongLogLine();
  });

  it("a guard's refusal of one megabyte: the rejected dead letter is cut the same way", async () => {
    await boot();
    const entryId = await publish(GUARD_STREAM);
    const copy = await deadLetteredOnce(GUARD_STREAM, entryId);
    expect(copy.dlq_reason).toBe('rejected');
    expectCutFrom(copy.dlq_error, HUGE_ASCII);
    expectNoLongLogLine();
  });

  it("a codec's decode error of one megabyte: the decode_error dead letter is cut the same way", async () => {
    await boot();
    const entryId = await publish(DECODE_STREAM);
    const copy = await deadLetteredOnce(DECODE_STREAM, entryId);
    expect(copy.dlq_reason).toBe('decode_error');
    expectCutFrom(copy.dlq_error, HUGE_EMOJI);
    expectNoLongLogLine();
  });
});
