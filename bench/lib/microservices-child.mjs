// One contender of bench/microservices.mjs, in a process of its own (each starts as cold as the
// others). Config: BENCH_CHILD (JSON: role, lib, ms, url, host, port, stream, group, n, pattern,
// seconds, warmupSeconds, concurrency[], extras). Roles:
//   drain-handler   a @StreamHandler no-op (synchronous, per entry, module defaults) in
//                   NestFactory.createApplicationContext drains `stream` (n pre-filled entries)
//   drain-handler-async   the same handler returning a resolved promise (the engine's async path)
//   drain-handler-payload the same handler with `@Payload()` (Nest's pipeline around the call)
//   drain-event     an @EventPattern no-op under EchoStreamServer (module defaults) drains it
//   serve-echo / serve-redis    a @MessagePattern echo handler (extras: cfg.extras) under
//                   EchoStreamServer / Nest's Transport.REDIS; says { type: 'ready' }, runs
//                   until SIGTERM
//   send-echo / send-redis      EchoStreamClient / Nest's ClientRedis: for each concurrency C,
//                   warm-up, then C callers in a loop of `await lastValueFrom(send(pattern, x))`
// A drain answers { rate, nodeCpuUs, handled, pending } (from the first handler call to an empty
// PEL; CPU µs per entry of this process); a sender { sends: [{ concurrency, rate, p50Us, p99Us,
// calls, errors, mismatches }] }; a failure { fatal }.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makePayload } from './payload.mjs';
import { pct } from './stats.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(join(root, 'package.json'));
const cfg = JSON.parse(process.env.BENCH_CHILD ?? '{}');
require('reflect-metadata');
const { NestFactory } = require('@nestjs/core');
const { Controller, Injectable, Logger, Module } = require('@nestjs/common');
const micro = await import('@nestjs/microservices');
const { Redis } = require('ioredis');

Logger.overrideLogger(['error']); // ClientRedis logs each connect

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Decorates `method` of `Class` with `decorators` (no decorator syntax in .mjs). */
function decorate(Class, method, ...decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(Class.prototype, method);
  for (const d of decorators) d(Class.prototype, method, descriptor);
}

/** A module of `controllers` / `providers` (and `imports`). */
function moduleOf(metadata) {
  class BenchModule {}
  Module(metadata)(BenchModule);
  return BenchModule;
}

/** Drains the pre-filled stream with `start(onEntry)`'s app; its figures. */
async function drain(start) {
  let handled = 0;
  let startedAt = 0;
  let cpu0 = null;
  const onEntry = () => {
    if (handled++ === 0) {
      startedAt = performance.now();
      cpu0 = process.cpuUsage();
    }
  };
  const admin = new Redis(cfg.url);
  const app = await start(onEntry);
  try {
    while (handled < cfg.n) await sleep(1);
    let pending;
    for (;;) {
      [pending] = await admin.xpending(cfg.stream, cfg.group);
      if (Number(pending) === 0) break;
      await sleep(1);
    }
    const seconds = (performance.now() - startedAt) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return {
      rate: cfg.n / seconds,
      nodeCpuUs: (cpu.user + cpu.system) / cfg.n,
      handled,
      pending: Number(pending),
    };
  } finally {
    await app.close();
    admin.disconnect();
  }
}

/**
 * (a) the module's own @StreamHandler; `async`: the no-op returns a promise (a2); `payload`: its
 * parameter is `@Payload()`, so the call runs through Nest's pipeline as an @EventPattern's does (a3).
 */
function startStreamHandler(onEntry, { async = false, payload = false } = {}) {
  const { EchoStreamModule, StreamHandler, Payload } = require(cfg.lib);
  class Handler {
    handle() {
      onEntry();
      if (async) return Promise.resolve();
    }
  }
  decorate(Handler, 'handle', StreamHandler(cfg.stream, cfg.group));
  if (payload) Payload()(Handler.prototype, 'handle', 0);
  Injectable()(Handler);
  const AppModule = moduleOf({
    imports: [EchoStreamModule.forRoot({ connection: cfg.url })],
    providers: [Handler],
  });
  return NestFactory.createApplicationContext(AppModule, { logger: false });
}

/** (b) the same handler as an @EventPattern under EchoStreamServer. */
async function startEventPattern(onEntry) {
  const { EchoStreamServer } = require(cfg.ms);
  class Events {
    handle() {
      onEntry();
    }
  }
  decorate(Events, 'handle', micro.EventPattern(cfg.stream));
  Controller()(Events);
  const app = await NestFactory.createMicroservice(moduleOf({ controllers: [Events] }), {
    strategy: new EchoStreamServer({ connection: cfg.url, group: cfg.group }),
    logger: false,
  });
  await app.listen();
  return app;
}

/** The echo microservice of (c) or (d): replies with what it got. */
async function serve(transport) {
  class Echo {
    echo(data) {
      return data;
    }
  }
  decorate(Echo, 'echo', micro.MessagePattern(cfg.pattern, cfg.extras ?? {}));
  Controller()(Echo);
  const options =
    transport === 'echo'
      ? { strategy: new (require(cfg.ms).EchoStreamServer)({ connection: cfg.url, group: 'rpc' }) }
      : { transport: micro.Transport.REDIS, options: { host: cfg.host, port: cfg.port } };
  const app = await NestFactory.createMicroservice(moduleOf({ controllers: [Echo] }), {
    ...options,
    logger: ['error'],
  });
  await app.listen();
  process.send({ type: 'ready' });
  await new Promise((ok) => process.once('SIGTERM', ok));
  await app.close();
  return null;
}

/** Round trips per second of `send()` at each concurrency of cfg.concurrency. */
async function send(transport) {
  const { lastValueFrom } = require('rxjs');
  const client =
    transport === 'echo'
      ? new (require(cfg.ms).EchoStreamClient)({ connection: cfg.url })
      : new micro.ClientRedis({ host: cfg.host, port: cfg.port });
  await client.connect();
  const payload = makePayload(1);
  const sends = [];
  try {
    for (const concurrency of cfg.concurrency) {
      let calls = 0;
      let errors = 0;
      let mismatches = 0;
      const latencies = [];
      const run = async (seconds, record) => {
        const end = performance.now() + seconds * 1000;
        let seq = 0;
        await Promise.all(
          Array.from({ length: concurrency }, async (_, caller) => {
            while (performance.now() < end) {
              const data = { ...payload, seq: caller * 1e9 + seq++ };
              const t0 = performance.now();
              try {
                const reply = await lastValueFrom(client.send(cfg.pattern, data));
                if (!record) continue;
                latencies.push((performance.now() - t0) * 1000);
                calls++;
                if (reply?.seq !== data.seq) mismatches++;
              } catch {
                if (record) errors++;
              }
            }
          }),
        );
      };
      await run(cfg.warmupSeconds, false);
      await run(cfg.seconds, true);
      latencies.sort((a, b) => a - b);
      sends.push({
        concurrency,
        rate: calls / cfg.seconds,
        p50Us: pct(latencies, 50),
        p99Us: pct(latencies, 99),
        calls,
        errors,
        mismatches,
      });
    }
    return { sends };
  } finally {
    await client.close();
  }
}

const ROLES = {
  'drain-handler': () => drain(startStreamHandler),
  'drain-handler-async': () => drain((onEntry) => startStreamHandler(onEntry, { async: true })),
  'drain-handler-payload': () =>
    drain((onEntry) => startStreamHandler(onEntry, { payload: true })),
  'drain-event': () => drain(startEventPattern),
  'serve-echo': () => serve('echo'),
  'serve-redis': () => serve('redis'),
  'send-echo': () => send('echo'),
  'send-redis': () => send('redis'),
};

ROLES[cfg.role]().then(
  (result) =>
    result ? process.send({ type: 'result', ...result }, () => process.exit(0)) : process.exit(0),
  (err) =>
    process.send({ type: 'result', fatal: String(err?.stack ?? err) }, () => process.exit(1)),
);
