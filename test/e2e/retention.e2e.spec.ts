/**
 * Safe retention and the archive hook (docs/operations.md, issue 14) on a real Redis: what the stream holds
 * after retention ran (XLEN, XRANGE), what each group still has pending, what the archive method
 * received, and what a person sees (the warning, `ConsumerStats.retention()`, the metrics).
 * Every test uses fresh stream names.
 */
import 'reflect-metadata';
import { Injectable, type Type } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  EchoStreamConfigError,
  StreamArchive,
  StreamHandler,
  type ArchivedEntry,
  type EchoStreamModuleOptions,
  type StreamMessage,
} from '../../lib';
import { retentionLockKey } from '../../lib/redis/package-keys';
import { bootApp, closeApps, fill as fillStream, type BootedApp } from '../support/lifecycle-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let seq = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(closeApps);
afterAll(async () => {
  await stopAllRedisServers();
});

function freshStream(what: string): string {
  return `ret-${what}-${++seq}`;
}

function fill(stream: string, count: number, from = 0): Promise<string[]> {
  return fillStream(redis, stream, count, from);
}

async function entryIds(stream: string): Promise<string[]> {
  return (await redis.xrange(stream, '-', '+')).map(([id]) => id);
}

function boot(
  options: EchoStreamModuleOptions,
  providers: Type<unknown>[] = [],
): Promise<BootedApp> {
  return bootApp({ connection: server.url, ...options }, providers);
}

/** A handler class for `stream`/`group` recording the branded ids it handled. */
function recordingHandler(stream: string, group: string, handled: Set<string>): Type<unknown> {
  @Injectable()
  class Recording {
    @StreamHandler(stream, group, { blockMs: 100, minIdleMs: 1000, claimIntervalMs: 100 })
    handle(message: StreamMessage<unknown>): void {
      handled.add(message.id);
    }
  }
  return Recording;
}

describe('the floor', () => {
  it('a dead group (no consumers, never read) holds retention back and is named; ignoreGroups releases it', async () => {
    const stream = freshStream('dead');
    await redis.xgroup('CREATE', stream, 'dead', '0', 'MKSTREAM');
    await fill(stream, 100);
    const handled = new Set<string>();
    const first = await boot({ consumerName: 'p1', retention: [{ stream, maxLen: 10 }] }, [
      recordingHandler(stream, 'live', handled),
    ]);
    await waitFor(() => handled.size === 100, { message: 'the live group handled all 100' });
    await waitFor(() => first.stats.retention(stream).heldBackBy === 'dead', {
      message: 'the report names the dead group',
    });
    await sleep(600); // a few more intervals
    expect(await redis.xlen(stream)).toBe(100); // nothing trimmed: 'dead' has delivered nothing
    expect(first.stats.retention(stream)).toMatchObject({
      stream,
      trimmedTotal: 0,
      heldBackBy: 'dead',
      length: 100,
    });
    const warnings = first.logger.matching(/held back by group 'dead'/);
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings[0]).toContain(`Retention of stream '${stream}'`);
    expect(warnings[0]).toMatch(/ignoreGroups/);
    // at most one warning per interval: the app ran for well under 50 intervals of 200 ms
    expect(warnings.length).toBeLessThan(50);
    await first.app.close();

    const second = await boot({
      consumerName: 'p1',
      retention: [{ stream, maxLen: 10, ignoreGroups: ['dead'] }],
    });
    await waitFor(async () => (await redis.xlen(stream)) === 10, { message: 'trimmed to 10' });
    await waitFor(() => second.stats.retention(stream).lastRunAt !== null);
    expect(second.stats.retention(stream)).toMatchObject({ trimmedTotal: 90, heldBackBy: null });
    expect(second.logger.matching(/held back/)).toEqual([]);
    // the 10 newest stay; 'dead' still sees them as undelivered
    const left = await redis.xrange(stream, '-', '+');
    expect(left.map(([, f]) => f[1])).toEqual(Array.from({ length: 10 }, (_, i) => `b${90 + i}`));
  });

  it('a pending entry holds the trim back exactly at itself, whoever holds it', async () => {
    const stream = freshStream('pending');
    const ids = await fill(stream, 50);
    await redis.xgroup('CREATE', stream, 'g', '0');
    // a consumer of another app read 30 entries and acked all but the 21st (index 20)
    await redis.xreadgroup('GROUP', 'g', 'other-app', 'COUNT', 30, 'STREAMS', stream, '>');
    await redis.xack(stream, 'g', ...ids.slice(0, 30).filter((_, i) => i !== 20));
    const { stats } = await boot({ retention: [{ stream, maxLen: 5 }] });
    await waitFor(async () => (await redis.xlen(stream)) === 30, {
      message: 'trimmed to the floor',
    });
    await sleep(500);
    expect(await entryIds(stream)).toEqual(ids.slice(20)); // the pending one is the oldest left
    expect(stats.retention(stream)).toMatchObject({
      trimmedTotal: 20,
      heldBackBy: 'g',
      oldestEntryId: ids[20],
      length: 30,
    });
    // acking it lets the trim go on up to the undelivered entries (last-delivered-id = ids[29])
    await redis.xack(stream, 'g', ids[20]);
    await waitFor(async () => (await redis.xlen(stream)) === 20, { message: 'up to undelivered' });
    expect(await entryIds(stream)).toEqual(ids.slice(30));
    await waitFor(() => stats.retention(stream).trimmedTotal === 30);
  });

  it('maxAgeMs trims by entry time, also bounded by the floor', async () => {
    const stream = freshStream('age');
    const now = Date.now();
    // 10 entries an hour old, 10 from now (explicit ids carry the time)
    for (let i = 0; i < 10; i++)
      await redis.xadd(stream, `${now - 3_600_000}-${i}`, 'id', `old${i}`, 'data', '1');
    for (let i = 0; i < 10; i++)
      await redis.xadd(stream, `${now + 1}-${i}`, 'id', `new${i}`, 'data', '1');
    await redis.xgroup('CREATE', stream, 'g', `${now - 3_600_000}-4`); // delivered up to old4
    const { stats } = await boot({ retention: [{ stream, maxAgeMs: 60_000 }] });
    await waitFor(async () => (await redis.xlen(stream)) === 15, { message: 'old0..old4 trimmed' });
    await sleep(500);
    expect(await redis.xlen(stream)).toBe(15);
    expect(stats.retention(stream).heldBackBy).toBe('g');
    await redis.xgroup('SETID', stream, 'g', '$');
    await waitFor(async () => (await redis.xlen(stream)) === 10, { message: 'every old one gone' });
    expect((await redis.xrange(stream, '-', '+')).map(([, f]) => f[1])).toEqual(
      Array.from({ length: 10 }, (_, i) => `new${i}`),
    );
    // the figure is set once the trim's reply is in, a moment after the server trimmed
    await waitFor(() => stats.retention(stream).heldBackBy === null, {
      message: 'no group holds the trim back',
    });
  });
});

describe('the archive hook', () => {
  it('a throwing archive method trims nothing; the next interval archives and trims', async () => {
    const stream = freshStream('archive-throw');
    const ids = await fill(stream, 50);
    const calls: Array<{ ok: boolean; entries: ArchivedEntry[]; lengthAtCall: number }> = [];
    @Injectable()
    class Archive {
      @StreamArchive(stream)
      async fold(entries: ArchivedEntry[]): Promise<void> {
        const lengthAtCall = await redis.xlen(stream);
        const ok = calls.length > 0;
        calls.push({ ok, entries, lengthAtCall });
        if (!ok) throw new Error('cold storage unavailable');
      }
    }
    const { logger, stats } = await boot({ retention: [{ stream, maxLen: 10 }] }, [Archive]);
    await waitFor(() => calls.length >= 1, { message: 'the first archive call' });
    await sleep(50);
    expect(await redis.xlen(stream)).toBe(50); // the throw trimmed nothing
    expect(
      logger.has(
        /@StreamArchive Archive\.fold failed on 40 entries .*cold storage unavailable; none of them trimmed/,
      ),
    ).toBe(true);
    await waitFor(async () => (await redis.xlen(stream)) === 10, {
      message: 'trimmed after the retry',
    });
    expect(calls).toHaveLength(2);
    const [failed, retried] = calls;
    expect(failed.entries.map((e) => e.entryId)).toEqual(ids.slice(0, 40));
    expect(retried.entries.map((e) => e.entryId)).toEqual(ids.slice(0, 40));
    expect(retried.lengthAtCall).toBe(50); // handed over BEFORE the trim
    expect(retried.entries[0]).toEqual({
      entryId: ids[0],
      id: 'b0',
      fields: { id: 'b0', data: '{"i":0}' },
      at: new Date(Number(ids[0].split('-')[0])),
    });
    expect(await entryIds(stream)).toEqual(ids.slice(40));
    await waitFor(() => stats.retention(stream).trimmedTotal === 40);
  });

  it('hands over pages oldest first and trims each page after its call returned', async () => {
    const stream = freshStream('archive-pages');
    const ids = await fill(stream, 2600);
    const pages: Array<{ first: string; count: number; oldestInStream: string }> = [];
    @Injectable()
    class Archive {
      @StreamArchive(stream)
      async fold(entries: ArchivedEntry[]): Promise<void> {
        const [head] = await redis.xrange(stream, '-', '+', 'COUNT', 1);
        pages.push({ first: entries[0].entryId, count: entries.length, oldestInStream: head[0] });
      }
    }
    await boot({ retention: [{ stream, maxLen: 100 }] }, [Archive]);
    await waitFor(async () => (await redis.xlen(stream)) === 100, { message: 'trimmed to 100' });
    expect(pages.map((p) => p.count)).toEqual([1000, 1000, 500]);
    expect(pages.map((p) => p.first)).toEqual([ids[0], ids[1000], ids[2000]]);
    // each page's entries were still in the stream when its call ran
    expect(pages.map((p) => p.oldestInStream)).toEqual([ids[0], ids[1000], ids[2000]]);
  });
});

describe('the lock', () => {
  it('one process trims while it lives; a held lock stops everyone until its TTL ran out', async () => {
    const stream = freshStream('lock');
    const archivedBy: Record<string, number> = { a: 0, b: 0 };
    const archiveFor = (who: string) => {
      @Injectable()
      class Archive {
        @StreamArchive(stream)
        fold(entries: ArchivedEntry[]): void {
          archivedBy[who] += entries.length;
        }
      }
      return Archive;
    };
    // a crashed holder: the lock is taken by a token nobody renews, for 1.5 s
    await redis.set(retentionLockKey(stream), 'crashed-process', 'PX', 1500);
    await fill(stream, 30);
    const started = Date.now();
    const a = await boot({ consumerName: 'a', retention: [{ stream, maxLen: 10 }] }, [
      archiveFor('a'),
    ]);
    const b = await boot({ consumerName: 'b', retention: [{ stream, maxLen: 10 }] }, [
      archiveFor('b'),
    ]);
    await waitFor(async () => (await redis.xlen(stream)) === 10, {
      message: 'first trim',
      timeoutMs: 10_000,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400); // not before the TTL ran out
    const holder = archivedBy.a > 0 ? 'a' : 'b';
    const other = holder === 'a' ? 'b' : 'a';
    expect(archivedBy[holder]).toBe(20);
    expect(archivedBy[other]).toBe(0);
    // the holder keeps the lock interval after interval
    for (let round = 0; round < 3; round++) {
      await fill(stream, 10, 100 + round * 10);
      await waitFor(async () => (await redis.xlen(stream)) === 10, { message: `round ${round}` });
    }
    expect(archivedBy[holder]).toBe(50);
    expect(archivedBy[other]).toBe(0);
    // the holder shuts down: it releases the lock and the other process takes over at once
    const apps2 = { a, b };
    await apps2[holder].app.close();
    // released: the key is gone, or already the other's (it may take it at once); never the holder's
    const lock = await redis.get(retentionLockKey(stream));
    expect(lock?.startsWith(`${holder}:`) ?? false).toBe(false);
    await fill(stream, 10, 200);
    await waitFor(async () => (await redis.xlen(stream)) === 10, { message: 'taken over' });
    expect(archivedBy[other]).toBe(10);
    // the count follows XTRIM's reply, which can land just after the stream shrank
    await waitFor(() => apps2[other].stats.retention(stream).trimmedTotal === 10, {
      message: 'trim counted',
    });
  });
});

describe('bad input', () => {
  const bad: Array<[string, unknown, RegExp]> = [
    [
      'maxLen 0',
      [{ stream: 's', maxLen: 0 }],
      /retention\[0\] \(stream 's'\): option 'maxLen' must be an integer >= 1, got number 0/,
    ],
    [
      'maxLen negative',
      [{ stream: 's', maxLen: -5 }],
      /option 'maxLen' must be an integer >= 1, got number -5/,
    ],
    [
      'maxAgeMs NaN',
      [{ stream: 's', maxAgeMs: Number.NaN }],
      /option 'maxAgeMs' must be an integer >= 1, got number NaN/,
    ],
    ['no limit', [{ stream: 's' }], /give maxAgeMs, maxLen or both/],
    [
      'no stream',
      [{ maxLen: 3 }],
      /retention\[0\]: option 'stream' must be a non-empty string, got undefined/,
    ],
    ['unknown key', [{ stream: 's', maxlen: 3 }], /unknown option 'maxlen'/],
    [
      'two rules',
      [
        { stream: 's', maxLen: 3 },
        { stream: 's', maxAgeMs: 9 },
      ],
      /two retention rules for stream 's'/,
    ],
    [
      'ignoreGroups',
      [{ stream: 's', maxLen: 3, ignoreGroups: 'dead' }],
      /option 'ignoreGroups' must be an array of group names/,
    ],
    ['not an array', { stream: 's', maxLen: 3 }, /option 'retention' must be an array/],
  ];
  it.each(bad)(
    '%s: a clear error at registration, nothing trimmed',
    async (_what, retention, message) => {
      const stream = 's';
      await redis.del(stream);
      await fill(stream, 20);
      await expect(
        boot({ retention: retention as EchoStreamModuleOptions['retention'] }),
      ).rejects.toThrow(message);
      expect(await redis.xlen(stream)).toBe(20);
    },
  );

  it('retentionIntervalMs must be a positive integer', async () => {
    await expect(boot({ retentionIntervalMs: 0 })).rejects.toThrow(
      /option 'retentionIntervalMs' must be an integer >= 1, got number 0/,
    );
  });

  it('a rule for a stream that does not exist: a warning naming it, nothing else touched', async () => {
    const stream = freshStream('missing');
    const other = freshStream('other');
    await fill(other, 20);
    const { logger, stats } = await boot({ retention: [{ stream, maxLen: 1 }] });
    await waitFor(() => logger.has(/no such stream/), { message: 'the warning' });
    expect(logger.matching(/no such stream/)[0]).toContain(`'${stream}'`);
    await sleep(500);
    expect(logger.matching(/no such stream/)).toHaveLength(1); // said once
    expect(await redis.exists(stream)).toBe(0);
    expect(await redis.xlen(other)).toBe(20);
    expect(stats.retention(stream)).toMatchObject({
      length: 0,
      oldestEntryId: null,
      trimmedTotal: 0,
    });
    expect(() => stats.retention(other)).toThrow(
      new RegExp(`no retention rule for stream "${other}" \\(rules: '${stream}'\\)`),
    );
  });

  it('@StreamArchive on a stream without a retention rule fails bootstrap', async () => {
    const stream = freshStream('no-rule');
    @Injectable()
    class Archive {
      @StreamArchive(stream)
      fold(): void {}
    }
    const error = await boot({}, [Archive]).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(EchoStreamConfigError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `@StreamArchive\\('${stream}'\\) on Archive\\.fold: stream '${stream}' has no retention rule`,
      ),
    );
  });

  it('two @StreamArchive methods for one stream fail bootstrap', async () => {
    const stream = freshStream('two-archives');
    @Injectable()
    class One {
      @StreamArchive(stream)
      fold(): void {}
    }
    @Injectable()
    class Two {
      @StreamArchive(stream)
      fold(): void {}
    }
    await expect(boot({ retention: [{ stream, maxLen: 1 }] }, [One, Two])).rejects.toThrow(
      `Two @StreamArchive('${stream}') methods: One.fold and Two.fold`,
    );
  });
});

describe('metrics', () => {
  it('echo_stream_retention_trimmed_total and echo_stream_length per stream with a rule', async () => {
    const stream = freshStream('metrics');
    await fill(stream, 25);
    const { stats } = await boot({ retention: [{ stream, maxLen: 5 }] });
    await waitFor(
      () => stats.retention(stream).trimmedTotal === 20 && stats.retention(stream).length === 5,
    );
    const text = stats.prometheus();
    expect(text).toContain('# TYPE echo_stream_retention_trimmed_total counter');
    expect(text).toContain(`echo_stream_retention_trimmed_total{stream="${stream}"} 20`);
    expect(text).toContain('# TYPE echo_stream_length gauge');
    expect(text).toContain(`echo_stream_length{stream="${stream}"} 5`);
  });
});
