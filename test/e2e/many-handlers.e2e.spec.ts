/**
 * A hundred handlers on a handful of connections (issue 15, docs/scale.md), on a real redis-server:
 * 100 handlers on 100 streams, methods of ONE provider built programmatically. With `sharedReads`
 * on (the module default) the handlers of one group share one blocking XREADGROUP per node; each
 * keeps its own loop otherwise. Every test states the invariant it checks.
 *
 * Connection names (CLIENT SETNAME): `echo-stream-shared` (producer, admin, stats, CLIENT
 * UNBLOCK), `echo-stream-commands` (every loop's non-blocking commands), `echo-stream-read` (one
 * per group per node), `echo-stream-loop` (one per loop with `sharedReads: false`).
 */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Injectable, Module, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamModule,
  StreamHandler,
  type EchoStreamModuleOptions,
  type StreamHandlerOptions,
  type StreamMessage,
} from '../../lib';
import { processRegistry, RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const HANDLERS = 100;
const GROUP = 'g';

interface Payload {
  k: number;
  at: number;
}
type Handle = (index: number, message: StreamMessage<Payload>) => unknown;

let server: RedisServer;
let redis: Redis;
let seq = 0;
const apps = new Set<INestApplicationContext>();

beforeAll(async () => {
  const dist = path.join(process.cwd(), 'dist', 'index.js');
  if (!fs.existsSync(dist)) throw new Error(`${dist} is missing: run npm run build first`);
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await Promise.all([...apps].map((app) => app.close()));
  apps.clear();
  await stopManyProcesses();
});
afterAll(async () => {
  await stopAllRedisServers();
});

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

/** `count` fresh stream keys of one test. */
function streamsFor(tag: string, count = HANDLERS): string[] {
  const base = `many-${tag}-${process.pid}-${++seq}`;
  return Array.from({ length: count }, (_, i) => `${base}:${String(i).padStart(3, '0')}`);
}

/** One provider with a `@StreamHandler` method per stream (`h000`, `h001`, ...). */
function manyHandlers(
  streams: readonly string[],
  handle: Handle,
  options: Partial<StreamHandlerOptions> = {},
  groupOf: (index: number) => string = () => GROUP,
): Type<unknown> {
  class ManyHandlers {}
  streams.forEach((stream, index) => {
    const key = `h${String(index).padStart(3, '0')}`;
    Object.defineProperty(ManyHandlers.prototype, key, {
      value: (message: StreamMessage<Payload>) => handle(index, message),
      writable: true,
      configurable: true,
    });
    const descriptor = Object.getOwnPropertyDescriptor(ManyHandlers.prototype, key)!;
    StreamHandler(stream, groupOf(index), options)(ManyHandlers.prototype, key, descriptor);
  });
  Injectable()(ManyHandlers);
  return ManyHandlers;
}

/** Boots an app of the module and `handlers`; resolves once every loop is 'running'. */
async function startApp(
  handlers: Type<unknown>,
  loops: number,
  options: EchoStreamModuleOptions = {},
): Promise<INestApplicationContext> {
  class AppModule {}
  Module({
    imports: [
      EchoStreamModule.forRoot({
        connection: server.url,
        consumerName: 'e2e',
        shutdownTimeoutMs: 2000,
        ...options,
      }),
    ],
    providers: [handlers],
  })(AppModule);
  // abortOnError: false: a bad option fails the test, not the Jest process
  const app = await NestFactory.createApplicationContext(AppModule, {
    logger: ['error'],
    abortOnError: false,
  });
  apps.add(app);
  const stats = app.get(ConsumerStats);
  await waitFor(
    () => {
      const snaps = stats.snapshot();
      return snaps.length === loops && snaps.every((s) => s.state === 'running');
    },
    { timeoutMs: 15_000, message: `${loops} loops running` },
  );
  return app;
}

async function closeApp(app: INestApplicationContext): Promise<void> {
  apps.delete(app);
  await app.close();
}

/**
 * Entries k = from .. from+count-1 on each stream, stamped with the time, in one pipeline; or,
 * `atomic`, in one MULTI, so a parked read sees all of them at once.
 */
async function publishAll(
  streams: readonly string[],
  from: number,
  count = 1,
  atomic = false,
): Promise<void> {
  const batch = atomic ? redis.multi() : redis.pipeline();
  for (let k = from; k < from + count; k++) {
    for (const stream of streams) {
      const payload: Payload = { k, at: Date.now() };
      batch.xadd(stream, '*', 'id', `${stream}/${k}`, 'data', JSON.stringify(payload));
    }
  }
  const replies = await batch.exec();
  const failed = replies?.find(([err]) => err);
  if (failed) throw failed[0];
}

/** XPENDING summary count of `group` summed over `streams`. */
async function pendingTotal(streams: readonly string[], group = GROUP): Promise<number> {
  const pipeline = redis.pipeline();
  for (const stream of streams) pipeline.xpending(stream, group);
  const replies = (await pipeline.exec()) ?? [];
  let total = 0;
  for (const [err, reply] of replies) {
    if (err) throw err;
    total += Number((reply as [number])[0]);
  }
  return total;
}

/** CLIENT LIST entries named `echo-stream-*`, by name. */
async function echoConnections(): Promise<{ total: number; byName: Record<string, number> }> {
  const list = String(await redis.client('LIST'));
  const byName: Record<string, number> = {};
  let total = 0;
  for (const line of list.split('\n')) {
    const name = / name=(\S*)/.exec(line)?.[1] ?? '';
    if (!name.startsWith('echo-stream-')) continue;
    byName[name] = (byName[name] ?? 0) + 1;
    total++;
  }
  return { total, byName };
}

/** Commands Redis ran since the last CONFIG RESETSTAT, without the test's own INFO / RESETSTAT. */
async function commandsSinceReset(): Promise<Record<string, number>> {
  const text = await redis.info('commandstats');
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m && m[1] !== 'info' && m[1] !== 'config|resetstat') out[m[1]] = Number(m[2]);
  }
  return out;
}

/** Names of the groups of `stream` (XINFO GROUPS, RESP2 arrays or RESP3 maps). */
async function groupNames(stream: string): Promise<string[]> {
  const groups = (await redis.xinfo('GROUPS', stream)) as unknown[];
  return groups.map((g) => {
    if (Array.isArray(g)) return String(g[g.indexOf('name') + 1]);
    if (g instanceof Map) return String(g.get('name'));
    return String((g as { name: unknown }).name);
  });
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

// ---------------------------------------------------------------------------------------------
// the many-handlers child process (test/support/many-handlers-process.mjs, BUILT package)
// ---------------------------------------------------------------------------------------------

const CHILD_SCRIPT = path.join('test', 'support', 'many-handlers-process.mjs');
const children = processRegistry(
  Symbol.for('nestjs-echo-stream.test.many-handlers-processes'),
  () => ({
    pids: new Set<number>(),
    dirs: new Set<string>(),
  }),
);
const live = new Set<ManyProcess>();

/** One process running a handler per stream; `started` counts handler calls per stream index. */
class ManyProcess {
  readonly started = new Map<number, number>();
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private output = '';

  constructor(env: Record<string, string>) {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    delete childEnv.NODE_OPTIONS; // jest's --experimental-vm-modules is not for the child
    this.child = spawn(process.execPath, [CHILD_SCRIPT], {
      cwd: process.cwd(),
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = this.child.pid;
    if (pid !== undefined) children.pids.add(pid);
    live.add(this);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', () => {
        if (pid !== undefined) children.pids.delete(pid);
        live.delete(this);
        resolve();
      }),
    );
    let rest = '';
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        const [kind, index] = line.split(' ');
        if (kind === 'START') {
          const i = Number(index);
          this.started.set(i, (this.started.get(i) ?? 0) + 1);
        }
        this.output = (this.output + line + '\n').slice(-4000);
      }
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => {
      this.output = (this.output + chunk).slice(-4000);
    });
  }

  ready(timeoutMs = 20_000): Promise<unknown> {
    return waitFor(() => this.output.includes('READY '), {
      timeoutMs,
      message: `many-handlers process READY (output: ${this.output})`,
    });
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill(signal);
    await this.exited;
  }
}

async function stopManyProcesses(): Promise<void> {
  await Promise.all([...live].map((p) => p.kill('SIGKILL')));
}

// ---------------------------------------------------------------------------------------------
// tests
// ---------------------------------------------------------------------------------------------

describe('100 handlers on 100 streams (issue 15)', () => {
  it('a clean run: every entry is handled exactly once, in stream order, by the handler of its own stream, and acked', async () => {
    // Invariant: with the read shared, entries still reach only the handler of their stream, each
    // once, in stream order (concurrency 1); every PEL ends empty; per-handler stats add up.
    const streams = streamsFor('once');
    const seen = streams.map(() => [] as number[]);
    const misrouted: string[] = [];
    const handlers = manyHandlers(streams, (i, m) => {
      if (m.stream !== streams[i] || m.group !== GROUP) misrouted.push(`${i}: ${m.stream}`);
      seen[i].push(m.payload.k);
    });
    await publishAll(streams, 0, 10); // before start: read by the first reads
    const app = await startApp(handlers, HANDLERS);
    await publishAll(streams, 10, 10); // while parked
    await waitFor(() => seen.every((s) => s.length >= 20), {
      timeoutMs: 15_000,
      message: '20 entries handled on every stream',
    });
    await waitFor(async () => (await pendingTotal(streams)) === 0, { message: 'PELs empty' });
    const stats = app.get(ConsumerStats);
    await waitFor(() => stats.snapshot().every((s) => s.totalAcked === 20), {
      message: 'every loop counted 20 acks',
    });
    expect(misrouted).toEqual([]);
    for (const s of seen) expect(s).toEqual(range(20));
    for (const snap of stats.snapshot()) {
      expect(snap).toMatchObject({ totalRead: 20, totalAcked: 20, totalErrors: 0, totalDlq: 0 });
    }
    expect(new Set(stats.snapshot().map((s) => s.handler)).size).toBe(HANDLERS);
  });

  it('sharedReads on (the default): a node holds at most groups + 2 connections, whatever the number of handlers', async () => {
    // Invariant (docs/scale.md): 100 handlers in 2 groups hold one shared read per group, one
    // commands connection and the shared one: <= 4 connections, no per-loop connection, before
    // and after traffic; and both groups are served.
    const streams = streamsFor('conn');
    const groupOf = (i: number) => (i < 60 ? 'billing' : 'audit');
    const handled = streams.map(() => 0);
    const handlers = manyHandlers(streams, (i) => void handled[i]++, {}, groupOf);
    await startApp(handlers, HANDLERS);
    await sleep(300); // every read parked
    const parked = await echoConnections();
    await publishAll(streams, 0, 2);
    await waitFor(() => handled.every((n) => n === 2), { message: 'both groups served' });
    const after = await echoConnections();
    for (const c of [parked, after]) {
      expect(c.total).toBeLessThanOrEqual(2 + 2);
      expect(c.byName['echo-stream-loop'] ?? 0).toBe(0);
      expect(c.byName['echo-stream-commands'] ?? 0).toBeLessThanOrEqual(1);
      expect(c.byName['echo-stream-shared'] ?? 0).toBeLessThanOrEqual(1);
    }
    expect(parked.byName['echo-stream-read']).toBe(2); // one parked read per group
  });

  it("sharedReads: false: one connection per loop plus the shared one (today's behaviour)", async () => {
    // Invariant: the opt-out keeps one connection per loop (`echo-stream-loop`) + the shared one,
    // and handles as before.
    const streams = streamsFor('perloop');
    const handled = streams.map(() => 0);
    const handlers = manyHandlers(streams, (i) => void handled[i]++);
    await startApp(handlers, HANDLERS, { sharedReads: false });
    await sleep(300);
    expect((await echoConnections()).byName).toEqual({
      'echo-stream-loop': HANDLERS,
      'echo-stream-shared': 1,
    });
    await publishAll(streams, 0, 1);
    await waitFor(() => handled.every((n) => n === 1), { message: 'one entry per stream handled' });
    await waitFor(async () => (await pendingTotal(streams)) === 0);
  });

  it('idle: 100 parked handlers send at most 20 commands per second in all', async () => {
    // Invariant (docs/scale.md): no traffic, default timings: one shared read per blockMs and the
    // sweeps staggered and stretched while the group's PEL is empty stay within 20 commands/s.
    // A count over a window, not a speed: a slower machine can only send fewer.
    const streams = streamsFor('idle');
    await startApp(
      manyHandlers(streams, () => undefined),
      HANDLERS,
    );
    await sleep(1000); // past the start-up burst
    await redis.config('RESETSTAT');
    const windowS = 6;
    await sleep(windowS * 1000);
    const commands = await commandsSinceReset();
    const perSecond = Object.values(commands).reduce((a, b) => a + b, 0) / windowS;
    console.log(
      `idle, 100 handlers: ${perSecond.toFixed(1)} commands/s ${JSON.stringify(commands)}`,
    );
    expect(perSecond).toBeLessThanOrEqual(20);
  });

  it('a SIGKILLed process: a surviving process reclaims its entries, each by the handler of its stream', async () => {
    // Invariant: every entry the dead process held (3 per stream, one inside its handler) is
    // handled once by the survivor's handler of the same stream, as a redelivery (attempts >= 2),
    // not before the kill (the victim's heartbeat kept its claims); no loss; PELs end empty.
    const streams = streamsFor('crash');
    const defaults = { minIdleMs: 1000, claimIntervalMs: 200, blockMs: 1000 };
    const victim = new ManyProcess({
      REDIS_URL: server.url,
      STREAMS: JSON.stringify(streams),
      GROUP,
      CONSUMER_NAME: 'victim',
      HANDLE_MS: '60000',
      DEFAULTS: JSON.stringify(defaults),
    });
    await victim.ready();
    await publishAll(streams, 0, 3, true); // all 3 of a stream in the victim's first read
    await waitFor(() => streams.every((_, i) => victim.started.get(i) === 1), {
      timeoutMs: 15_000,
      message: 'the victim inside a handler on every stream',
    });
    expect(await pendingTotal(streams)).toBe(3 * HANDLERS);

    const handled = streams.map(() => [] as Array<{ k: number; attempts: number; at: number }>);
    const misrouted: string[] = [];
    const handlers = manyHandlers(
      streams,
      (i, m) => {
        if (m.stream !== streams[i]) misrouted.push(`${i}: ${m.stream}`);
        handled[i].push({ k: m.payload.k, attempts: m.attempts, at: Date.now() });
      },
      defaults,
    );
    await startApp(handlers, HANDLERS, { consumerName: 'survivor' });
    await sleep(2 * defaults.minIdleMs); // the survivor sweeps meanwhile: nothing may be stolen
    expect(handled.flat()).toEqual([]);
    const killedAt = Date.now();
    await victim.kill('SIGKILL');

    await waitFor(() => handled.every((h) => h.length >= 3), {
      timeoutMs: 15_000,
      message: 'every stream reclaimed by the survivor',
    });
    await waitFor(async () => (await pendingTotal(streams)) === 0, { message: 'PELs empty' });
    expect(misrouted).toEqual([]);
    for (const h of handled) {
      expect(h.map((e) => e.k).sort()).toEqual([0, 1, 2]);
      for (const e of h) {
        expect(e.attempts).toBeGreaterThanOrEqual(2);
        expect(e.at).toBeGreaterThanOrEqual(killedAt);
      }
    }
  });

  it('one slow handler does not hold back the others: their entries are handled while it works through its backlog', async () => {
    // Invariant: while handler 0 works through a backlog of ~10 s (200 entries x 50 ms; one batch
    // of 100 is 5 s), entries published to the 99 other streams are handled within about one
    // batch of their own (bound: 1.5 s, well under one slow batch), and the slow one is still
    // busy when they are all done.
    const streams = streamsFor('slow');
    const SLOW = 0;
    const BACKLOG = 200;
    let slowDone = 0;
    const latencies: number[] = [];
    const handlers = manyHandlers(streams, async (i, m) => {
      if (i === SLOW) {
        await sleep(50);
        slowDone++;
        return;
      }
      latencies.push(Date.now() - m.payload.at);
    });
    const app = await startApp(handlers, HANDLERS);
    await publishAll([streams[SLOW]], 0, BACKLOG);
    await waitFor(() => slowDone >= 2, { message: 'the slow handler busy' });
    const fast = streams.filter((_, i) => i !== SLOW);
    for (let k = 0; k < 10; k++) {
      await publishAll(fast, k);
      await sleep(100);
    }
    await waitFor(() => latencies.length === fast.length * 10, {
      timeoutMs: 10_000,
      message: 'every fast entry handled',
    });
    const slowWhenFastDone = slowDone;
    expect(slowWhenFastDone).toBeLessThan(BACKLOG); // really concurrent with the backlog
    const worst = Math.max(...latencies);
    console.log(
      `slow handler: the others' worst latency ${worst} ms; the slow one had done ${slowWhenFastDone}/${BACKLOG}`,
    );
    expect(worst).toBeLessThan(1500);
    await closeApp(app);
  });

  it('XGROUP DESTROY on one stream: the other 99 keep handling undisturbed, the destroyed one re-creates its group and recovers', async () => {
    // Invariant: a NOGROUP on one stream of a shared read neither stops nor degrades the other
    // loops (each still handles every entry exactly once, in order, never leaving 'running'); the
    // destroyed one re-creates its group (startId '0', so its old entries may come again) and
    // handles every entry published after the destroy; PELs end empty.
    const streams = streamsFor('nogroup');
    const VICTIM = 37;
    const seen = streams.map(() => [] as number[]);
    const handlers = manyHandlers(streams, (i, m) => void seen[i].push(m.payload.k), {
      blockMs: 1000,
    });
    const app = await startApp(handlers, HANDLERS);
    await publishAll(streams, 0);
    await waitFor(() => seen.every((s) => s.length === 1), { message: 'round 0 handled' });

    const stats = app.get(ConsumerStats);
    const disturbed = new Set<string>();
    const watch = setInterval(() => {
      for (const s of stats.snapshot())
        if (s.stream !== streams[VICTIM] && s.state !== 'running')
          disturbed.add(`${s.stream} ${s.state}`);
    }, 10);
    try {
      await redis.xgroup('DESTROY', streams[VICTIM], GROUP);
      for (let k = 1; k <= 5; k++) {
        await publishAll(streams, k);
        await sleep(100);
      }
      await waitFor(() => seen.every((s, i) => i === VICTIM || s.length === 6), {
        timeoutMs: 5000,
        message: 'the other 99 handled rounds 1-5',
      });
      await waitFor(() => range(5).every((k) => seen[VICTIM].includes(k + 1)), {
        timeoutMs: 10_000,
        message: 'the destroyed stream recovered',
      });
    } finally {
      clearInterval(watch);
    }
    expect([...disturbed]).toEqual([]);
    streams.forEach((_, i) => {
      if (i !== VICTIM) expect(seen[i]).toEqual(range(6));
    });
    expect(await groupNames(streams[VICTIM])).toEqual([GROUP]);
    await waitFor(async () => (await pendingTotal(streams)) === 0, { message: 'PELs empty' });
  });

  it('shutdown with 100 handlers parked on a 10 s block is prompt, and closes every connection', async () => {
    // Invariant (docs/delivery.md "Shutdown"): app.close() wakes the parked read(s) (CLIENT UNBLOCK) instead of
    // waiting out blockMs (10 s), and leaves no echo-stream connection open.
    const streams = streamsFor('close');
    const app = await startApp(
      manyHandlers(streams, () => undefined, {
        blockMs: 10_000,
        minIdleMs: 60_000,
        claimIntervalMs: 30_000, // the read really parks for blockMs
      }),
      HANDLERS,
    );
    await sleep(500);
    expect((await echoConnections()).total).toBeGreaterThan(0);
    const started = Date.now();
    await closeApp(app);
    expect(Date.now() - started).toBeLessThan(2000);
    await waitFor(async () => (await echoConnections()).total === 0, {
      timeoutMs: 2000,
      message: 'no echo-stream connection left',
    });
  });
});
