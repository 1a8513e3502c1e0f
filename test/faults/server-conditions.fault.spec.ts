/**
 * The server changes under a running loop (issue 5 scenarios 11-14): the group or the stream is
 * removed while the loop is parked, pending entries are deleted or trimmed, memory is full, writes
 * are paused, the server stalls. In-process loops (./support/in-process-loop.ts); the eviction
 * policy warning goes through the Nest glue. Scenario 12's WRONGTYPE key is covered by
 * test/e2e/stream-consumer-recovery.e2e.spec.ts.
 *
 * Redis configuration: plain servers without persistence; scenario 12 adds `--maxmemory 2mb
 * --maxmemory-policy noeviction` (or an eviction policy), scenario 14 `--enable-debug-command local`.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { StreamHandler } from '../../lib';
import { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import {
  attempts,
  commandStats,
  infoNumber,
  ledgerFile,
  pendingCount,
  publishAndHandle,
  report,
  startLoop,
  stopLoopsAndServersAfterEach,
  streamNames,
  waitForFreshPark,
  type ClientCall,
  type InProcessLoop,
} from './support/in-process-loop';
import { CaptureLogger, createEchoStreamApp } from './support/nest-app';
import {
  assertOracle,
  formatReport,
  oracleInput,
  OracleProducer,
  waitForQuiet,
} from './support/oracle';

const fresh = streamNames('cond');

stopLoopsAndServersAfterEach();

/** Samples the loop's state every 5 ms until `stop()`; returns the states seen. */
function watchStates(loop: InProcessLoop): { stop(): Set<string> } {
  const seen = new Set<string>();
  const timer = setInterval(() => seen.add(loop.consumer.snapshot().state), 5);
  return {
    stop() {
      clearInterval(timer);
      return seen;
    },
  };
}

function errorsAndWarnings(loop: InProcessLoop): string[] {
  return loop.logger.lines.filter((l) => l.startsWith('error') || l.startsWith('warn'));
}

describe('the group or the stream removed while parked (scenario 11)', () => {
  /**
   * A loop (blockMs 5000) handles 'before' and parks; after RESETSTAT, `remove` takes its group or
   * stream away; once `recreated` holds, 'after' is published and handled. Returns how long the
   * re-create took.
   */
  async function removeWhileParked(
    what: string,
    remove: (redis: Redis, stream: string) => Promise<unknown>,
    recreated: { until: (redis: Redis, stream: string) => Promise<boolean>; message: string },
  ): Promise<{ redis: Redis; stream: string; loop: InProcessLoop; recreatedMs: number }> {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh(what);
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      options: { blockMs: 5000, minIdleMs: 60_000, claimIntervalMs: 60_000 },
    });
    await redis.xadd(stream, '*', 'id', 'before', 'data', '{}');
    await waitFor(() => loop.handled.length === 1);
    await waitForFreshPark(loop, 200);
    await redis.config('RESETSTAT');
    const at = Date.now();
    await remove(redis, stream);
    await waitFor(() => recreated.until(redis, stream), {
      timeoutMs: 2000,
      message: recreated.message,
    });
    const recreatedMs = Date.now() - at;
    await redis.xadd(stream, '*', 'id', 'after', 'data', '{}');
    // a destroyed group is re-created at startId '0': 'before' comes again (at-least-once)
    await waitFor(() => loop.handled.some((h) => h.id === 'after'), { timeoutMs: 2000 });
    return { redis, stream, loop, recreatedMs };
  }

  it('XGROUP DESTROY while parked: NOGROUP at once, group re-created, entries after it handled', async () => {
    // Invariant: a destroyed group is re-created (one XGROUP CREATE) without waiting out blockMs;
    // entries published afterwards are handled; XPENDING 0; logged as a warning, not an error.
    const { redis, stream, loop, recreatedMs } = await removeWhileParked(
      'destroy',
      (redis, stream) => redis.xgroup('DESTROY', stream, 'g'),
      {
        until: async (redis, stream) =>
          ((await redis.xinfo('GROUPS', stream)) as unknown[]).length === 1,
        message: 'group re-created well before blockMs',
      },
    );
    // the XACK goes out with the loop's next read: XPENDING reaches 0 right after 'after' is handled
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, {
      timeoutMs: 2000,
      message: 'XPENDING 0',
    });
    expect(attempts(await commandStats(redis), 'xgroup|create')).toBe(1);
    expect(errorsAndWarnings(loop)).toEqual([
      expect.stringMatching(/^warn .*group or stream is gone \(NOGROUP/),
    ]);
    report('XGROUP DESTROY while parked', `group re-created ${recreatedMs} ms later`);
  });

  it('DEL of the stream while parked: the stream and group are re-created, entries after it handled', async () => {
    // Invariant: a deleted stream (Redis 7.0 unblocks the parked read with "UNBLOCKED the stream
    // key no longer exists", Redis 8.0 and Valkey 8/9 with "NOGROUP No such key") is treated like
    // NOGROUP: re-created with MKSTREAM without waiting out blockMs; entries published afterwards
    // handled; XPENDING 0; a warning, not an error.
    const { redis, stream, loop, recreatedMs } = await removeWhileParked(
      'del',
      (redis, stream) => redis.del(stream),
      {
        until: async (redis, stream) => (await redis.exists(stream)) === 1,
        message: 'stream re-created (MKSTREAM) well before blockMs',
      },
    );
    // the XACK goes out with the loop's next read: XPENDING reaches 0 right after 'after' is handled
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, {
      timeoutMs: 2000,
      message: 'XPENDING 0',
    });
    expect(attempts(await commandStats(redis), 'xgroup|create')).toBe(1);
    expect(errorsAndWarnings(loop)).toEqual([
      expect.stringMatching(
        /^warn .*group or stream is gone \((?:UNBLOCKED the stream key no longer exists|NOGROUP No such key)/,
      ),
    ]);
    report('DEL while parked', `stream re-created ${recreatedMs} ms later`);
  });
});

describe('pending entries deleted or trimmed (scenario 11)', () => {
  /** Publishes `count` entries and has `consumer` read them all without acking. */
  async function pendingFor(
    redis: Redis,
    stream: string,
    consumer: string,
    count: number,
  ): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(String(await redis.xadd(stream, '*', 'id', `e${i}`, 'data', JSON.stringify({ i }))));
    }
    await redis.xgroup('CREATE', stream, 'g', '0');
    await redis.xreadgroup('GROUP', 'g', consumer, 'COUNT', count, 'STREAMS', stream, '>');
    return ids;
  }

  it("a dead peer's pending entries removed by XDEL and XTRIM: XAUTOCLAIM reports them; acked, counted, never handed on", async () => {
    // Invariant: entries deleted from the stream while pending (Redis 7: XAUTOCLAIM's third reply
    // element) are acked and counted in totalDeleted, never given to the handler nor dead-lettered;
    // the surviving entries are handled; XPENDING 0.
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('xautoclaim-deleted');
    const ids = await pendingFor(redis, stream, 'dead-peer', 10);
    await redis.xtrim(stream, 'MINID', ids[2]); // e0, e1 trimmed
    await redis.xdel(stream, ids[4], ids[6], ids[8]);
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      options: { blockMs: 200, minIdleMs: 300, claimIntervalMs: 100 },
    });
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, {
      timeoutMs: 5000,
      message: 'the PEL emptied by the reclaim',
    });
    // counters move when the loop reads the XACK reply, a moment after Redis applied it
    await waitFor(() => loop.consumer.snapshot().totalAcked === 5, { timeoutMs: 2000 });
    expect(loop.handled.map((h) => h.id).sort()).toEqual(['e2', 'e3', 'e5', 'e7', 'e9']);
    expect(loop.handled.every((h) => h.attempts === 2)).toBe(true);
    expect(loop.consumer.snapshot()).toMatchObject({ totalDeleted: 5, totalDlq: 0, totalAcked: 5 });
    expect(await redis.exists(`${stream}:dlq`)).toBe(0);
    expect(loop.logger.has(/5 pending entries were deleted from the stream/)).toBe(true);
  });

  it('the own PEL of a restarted consumer with deleted entries: the drain acks and counts them, never hands them on', async () => {
    // Invariant: the own-PEL drain (XREADGROUP ... 0) answers deleted entries with a nil body:
    // acked, counted, never handled; the rest is handled; XPENDING 0.
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('drain-deleted');
    const ids = await pendingFor(redis, stream, 'stable', 6); // a previous life of 'stable'
    await redis.xdel(stream, ids[1], ids[3]);
    await redis.xtrim(stream, 'MINID', ids[1]); // e0 trimmed
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'stable',
      options: { blockMs: 200, minIdleMs: 60_000, claimIntervalMs: 60_000 },
    });
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, { timeoutMs: 5000 });
    expect(loop.handled.map((h) => h.id)).toEqual(['e2', 'e4', 'e5']);
    expect(loop.consumer.snapshot()).toMatchObject({ totalDeleted: 3, totalDlq: 0 });
    expect(await redis.exists(`${stream}:dlq`)).toBe(0);
  });
});

describe('maxmemory (scenario 12)', () => {
  it('noeviction and memory full: XADD and XGROUP CREATE fail with OOM, but loops keep draining and acking existing groups', async () => {
    // Invariant: with used_memory > maxmemory (noeviction) the server refuses XADD and XGROUP
    // CREATE, yet XREADGROUP, XACK, XAUTOCLAIM and XCLAIM still work: a running loop keeps
    // draining its backlog, and a loop started now on an existing group (whose XGROUP CREATE is
    // answered OOM, not BUSYGROUP) drains it too. Every entry handled, XPENDING 0.
    const server = await RedisServer.start({
      extraArgs: ['--maxmemory', '2mb', '--maxmemory-policy', 'noeviction'],
    });
    const redis = server.client();
    const running = fresh('oom-running');
    const late = fresh('oom-late');
    const runningProducer = new OracleProducer(redis, running);
    const lateProducer = new OracleProducer(redis, late);
    await runningProducer.publishMany(150);
    await lateProducer.publishMany(150);
    await redis.xgroup('CREATE', late, 'g', '0');
    const runningLedger = ledgerFile(running);
    const lateLedger = ledgerFile(late);
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const early = startLoop({
      url: server.url,
      stream: running,
      group: 'g',
      ledger: runningLedger,
      options: { blockMs: 200, batchSize: 10, minIdleMs: 60_000, claimIntervalMs: 100 },
      handle: async () => gate,
    });
    await waitFor(() => early.consumer.snapshot().state === 'running');

    // fill memory past maxmemory with one big string (allowed: the server was below the limit)
    await redis.setrange('ballast', 2 * 1024 * 1024, 'x');
    const used = await infoNumber(redis, 'memory', 'used_memory');
    expect(used).toBeGreaterThan(2 * 1024 * 1024);
    await expect(redis.xadd(running, '*', 'id', 'refused', 'data', '{}')).rejects.toThrow(/^OOM/);
    await expect(redis.xgroup('CREATE', late, 'other', '0')).rejects.toThrow(/^OOM/);
    await expect(redis.xgroup('CREATE', late, 'g', '0')).rejects.toThrow(/^OOM/); // not BUSYGROUP
    open();

    const lateLoop = startLoop({
      url: server.url,
      stream: late,
      group: 'g',
      ledger: lateLedger,
      options: { blockMs: 200, batchSize: 10, minIdleMs: 60_000, claimIntervalMs: 100 },
    });
    const a = await waitForQuiet(oracleInput(redis, runningProducer, runningLedger), {
      timeoutMs: 5000,
      message: 'the running loop drained its backlog under OOM',
    });
    const b = await waitForQuiet(oracleInput(redis, lateProducer, lateLedger), {
      timeoutMs: 5000,
      message: 'a loop started under OOM drained the existing group',
    });
    assertOracle(a);
    assertOracle(b);
    expect(await infoNumber(redis, 'memory', 'used_memory')).toBeGreaterThan(2 * 1024 * 1024);
    expect(lateLoop.consumer.snapshot().state).toBe('running');
    report(
      'maxmemory noeviction',
      `running: ${formatReport(a)}; started under OOM: ${formatReport(b)}`,
    );
  });

  const EVICTION_STREAM = `cond-eviction-${process.pid}`;

  @Injectable()
  class EvictionProbeHandler {
    @StreamHandler(EVICTION_STREAM, 'g', { blockMs: 200 })
    handle(): void {}
  }

  @Module({ providers: [EvictionProbeHandler] })
  class EvictionProbeModule {}

  async function bootWithLogs(url: string): Promise<{
    logs: CaptureLogger;
    close(): Promise<void>;
  }> {
    const logs = new CaptureLogger();
    const app = await createEchoStreamApp(
      { connection: url, consumerName: 'eviction-probe', shutdownTimeoutMs: 1000 },
      EvictionProbeModule,
      logs,
    );
    await app.init();
    return { logs, close: () => app.close() };
  }

  it('an eviction policy other than noeviction is logged as a warning at start (Nest glue)', async () => {
    // Invariant: streams and groups can be evicted under any policy but noeviction; the app says
    // so once at start, as a warning naming the policy; under noeviction it says nothing.
    const evicting = await RedisServer.start({ extraArgs: ['--maxmemory-policy', 'allkeys-lru'] });
    const app = await bootWithLogs(evicting.url);
    try {
      await waitFor(() => app.logs.has(/^warn .*maxmemory-policy is 'allkeys-lru'/), {
        timeoutMs: 3000,
        message: 'eviction warning',
      });
      expect(app.logs.matching(/maxmemory-policy/)).toHaveLength(1);
    } finally {
      await app.close();
    }

    const safe = await RedisServer.start();
    const safeRedis = safe.client();
    const quiet = await bootWithLogs(safe.url);
    try {
      await waitFor(async () => attempts(await commandStats(safeRedis), 'config|get') >= 1, {
        timeoutMs: 3000,
        message: 'the policy was read',
      });
      await sleep(50);
      expect(quiet.logs.matching(/maxmemory-policy/)).toEqual([]);
    } finally {
      await quiet.close();
    }
  });
});

describe('a paused or stalled server (scenarios 13 and 14)', () => {
  const blockMs = 2000;
  const patient = { blockMs, minIdleMs: 60_000, claimIntervalMs: 60_000 };

  /**
   * A server that takes DEBUG SLEEP (`--enable-debug-command local`), a loop with `blockMs` and a
   * ledger on a fresh stream, and three entries it has handled. `more` overrides the patient
   * sweep options.
   */
  async function stallableLoop(
    what: string,
    loopBlockMs: number,
    more: { minIdleMs?: number; claimIntervalMs?: number } = {},
  ) {
    const server = await RedisServer.start({ extraArgs: ['--enable-debug-command', 'local'] });
    const redis = server.client();
    const admin = server.client();
    const stream = fresh(what);
    const ledger = ledgerFile(stream);
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      ledger,
      options: { ...patient, blockMs: loopBlockMs, ...more },
    });
    const producer = await publishAndHandle(redis, stream, loop, 3);
    return { redis, admin, ledger, loop, producer };
  }

  it('CLIENT PAUSE 1500 WRITE (failover-like) while the loop acks and re-parks: latency only, the watchdog does not misfire', async () => {
    // Invariant: a write pause of 1500 ms holds the XACK and the next XREADGROUP (both writes) on
    // the server; with nothing to deliver, that read answers after about pause + blockMs (3.5 s),
    // still within blockMs + max(1000, blockMs) (4 s): no "no reply within" error, the loop never
    // degrades, entries published afterwards are handled, nothing lost, XPENDING 0.
    const server = await RedisServer.start();
    const redis = server.client();
    const admin = server.client();
    const stream = fresh('pause');
    const ledger = ledgerFile(stream);
    let pausedAt = 0;
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      ledger,
      options: patient,
      handle: async (m) => {
        if (m.id !== 'trigger') return;
        await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE'); // the XACK + read of this batch wait
        pausedAt = Date.now();
      },
    });
    const producer = await publishAndHandle(redis, stream, loop, 3);
    const states = watchStates(loop);
    await redis.xadd(stream, '*', 'id', 'trigger', 'data', '{}');
    await waitFor(() => pausedAt > 0);
    const read = (await waitFor(
      () =>
        loop.calls.find(
          (c) => c.method === 'readGroup' && c.args[5] !== undefined && c.at >= pausedAt,
        ),
      { message: 'the read sent into the pause' },
    )) as ClientCall;
    await waitFor(() => read.settledAt !== undefined, { timeoutMs: 6000 });
    const readMs = read.settledAt! - read.at;
    await producer.publishMany(3);
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 5000 });
    const seen = states.stop();
    assertOracle(result);
    // the park is shorter than blockMs when the loop's second sweep (at a random point of its
    // first interval) falls within it
    expect(readMs).toBeGreaterThanOrEqual(1400 + (read.args[5] as number));
    expect(read.error).toBeUndefined();
    expect(loop.logger.has(/no reply within/)).toBe(false);
    expect(errorsAndWarnings(loop)).toEqual([]);
    expect([...seen]).toEqual(['running']);
    report(
      'CLIENT PAUSE 1500 WRITE',
      `the read sent into the pause answered after ${readMs} ms ` +
        `(watchdog ${blockMs + Math.max(1000, blockMs)} ms); ${formatReport(result)}`,
    );
  });

  it('DEBUG SLEEP 1 just before a parked read times out: latency only, the watchdog does not misfire', async () => {
    // Invariant: a 1 s stall of the whole server delays the parked read's reply to about
    // blockMs + 1 s < blockMs + max(1000, blockMs): no misfire, never degraded, entries published
    // during the stall handled after it, XPENDING 0.
    const { redis, admin, ledger, loop, producer } = await stallableLoop('sleep1', blockMs);
    const states = watchStates(loop);
    const read = await waitForFreshPark(loop, 100, { blockMs });
    await sleep(Math.max(0, read.at + blockMs - 100 - Date.now()));
    const stall = admin.call('DEBUG', 'SLEEP', '1');
    await sleep(20);
    await producer.publishMany(3); // queued behind the stall
    await stall;
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 5000 });
    await waitFor(() => read.settledAt !== undefined, { timeoutMs: 5000 });
    const seen = states.stop();
    assertOracle(result);
    expect(read.settledAt! - read.at).toBeGreaterThanOrEqual(blockMs + 800);
    expect(loop.logger.has(/no reply within/)).toBe(false);
    expect(errorsAndWarnings(loop)).toEqual([]);
    expect([...seen]).toEqual(['running']);
    report(
      'DEBUG SLEEP 1',
      `the parked read answered after ${read.settledAt! - read.at} ms (watchdog ${blockMs + Math.max(1000, blockMs)} ms); ${formatReport(result)}`,
    );
  });

  it('DEBUG SLEEP 2 during a park cut short by the sweep schedule: the margin is that of blockMs 3000, no misfire', async () => {
    // Invariant: a loop parks for less than blockMs when a sweep or a pause-flag read is due
    // sooner (here every park: claimIntervalMs 500); the reply of such a short park may still
    // come max(1000, blockMs) late (3 s), so a 2 s stall landing on it is latency, not a dead
    // link: no "no reply within", never degraded, nothing lost, XPENDING 0. (With the margin of
    // the short park itself, max(1000, ~500 ms), the watchdog dropped the link.)
    const { redis, admin, ledger, loop, producer } = await stallableLoop('short-park', 3000, {
      minIdleMs: 2000,
      claimIntervalMs: 500,
    });
    const states = watchStates(loop);
    const read = await waitForFreshPark(loop, 40);
    const park = read.args[5] as number;
    const stall = admin.call('DEBUG', 'SLEEP', '2');
    await sleep(20);
    await producer.publishMany(3); // queued behind the stall
    await stall;
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 6000 });
    await waitFor(() => read.settledAt !== undefined, { timeoutMs: 5000 });
    const seen = states.stop();
    assertOracle(result);
    expect(park).toBeLessThanOrEqual(1000); // the premise: a short park
    expect(read.settledAt! - read.at).toBeGreaterThanOrEqual(1800); // it did span the stall
    expect(read.error).toBeUndefined();
    expect(loop.logger.has(/no reply within/)).toBe(false);
    expect(errorsAndWarnings(loop)).toEqual([]);
    expect([...seen]).toEqual(['running']);
    report(
      'DEBUG SLEEP 2, short park',
      `a ${park} ms park answered after ${read.settledAt! - read.at} ms (margin 3000 ms); ${formatReport(result)}`,
    );
  });

  it('DEBUG SLEEP 2 with blockMs 100: a stall longer than the margin is taken for a dead link; the connection is replaced and nothing is lost', async () => {
    // Invariant: a stall past blockMs + max(1000, blockMs) trips the watchdog (it cannot tell a
    // stall from a dead link); the replacement connection waits for the server, the entries
    // published during the stall (some may be delivered into the abandoned read) are all handled,
    // XPENDING 0, and the loop is running again.
    const { redis, admin, ledger, loop, producer } = await stallableLoop('sleep2', 100);
    // The read must be parked when the server stalls: with BLOCK 100 a busy machine can deliver
    // the DEBUG SLEEP after that read timed out, while the loop is between two reads (no read is
    // then stuck and the watchdog rightly stays quiet). Stall again (at most 3 times) until a read
    // sent before the stall was left without a reply past the margin.
    let stalledAt = 0;
    for (let attempt = 1; ; attempt++) {
      const parked = await waitForFreshPark(loop, 40);
      const stall = admin.call('DEBUG', 'SLEEP', '2');
      stalledAt = Date.now();
      await sleep(20);
      const during = producer.publishMany(5);
      await stall;
      await during;
      await waitFor(() => parked.settledAt !== undefined, { timeoutMs: 5000 });
      if (parked.settledAt! - parked.at >= 1000 || attempt === 3) break;
    }
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 8000 });
    const settledMs = Date.now() - stalledAt;
    assertOracle(result);
    expect(loop.logger.has(/XREADGROUP got no reply within 1100 ms/)).toBe(true);
    await waitFor(() => loop.consumer.snapshot().state === 'running', { timeoutMs: 3000 });
    report(
      'DEBUG SLEEP 2, blockMs 100',
      `quiet ${settledMs} ms after the stall began; ${formatReport(result)}`,
    );
  });
});
