// This library in a Nest application context: one @StreamHandler on one provider, module defaults
// except what the variant states. cfg.variant: 'each' (per-entry, sync handler), 'batch'
// (batch: true, acks the whole read), 'c16' (concurrency: 16, 1 ms async handler), 'nest' (the
// per-entry handler with one interceptor and a ValidationPipe-checked DTO through @Payload: the
// Nest pipeline of docs/delivery.md "Nest pipeline"; needs class-validator and class-transformer, dev dependencies).
// Besides: cfg.retry (the handler's `retry` option), cfg.failEvery (the retry workload: every
// failEvery-th entry fails its first attempt, see ../lib/retry-probe.mjs), cfg.protocol (2 or 3:
// the module's connections speak that RESP version; default: the client's own default),
// cfg.sharedReads (the module's `sharedReads` option; default: the module's default, on).
// The library is loaded from dist/index.js (npm run build), or from BENCH_LIB (another build).
import 'reflect-metadata';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cfg, done, fail, next, send, Sink, sleep, sleep1 } from '../lib/child.mjs';
import { FailOnce } from '../lib/retry-probe.mjs';

const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const libPath = cfg.lib ?? join(root, 'dist/index.js');

async function main() {
  const lib = require(libPath);
  const common = await import('@nestjs/common');
  const { Injectable, Module } = common;
  const { NestFactory } = await import('@nestjs/core');
  const { EchoStreamModule, StreamHandler, ConsumerStats } = lib;

  const sink = new Sink(cfg);
  const variant = cfg.variant ?? 'each';
  const options =
    variant === 'batch' ? { batch: true } : variant === 'c16' ? { concurrency: 16 } : {};
  if (cfg.retry !== undefined) options.retry = cfg.retry;
  const probe = cfg.failEvery
    ? new FailOnce({ n: cfg.n, failEvery: cfg.failEvery, policy: cfg.retry })
    : null;

  class BenchHandler {
    handle(message) {
      sink.onPayload(message.payload);
    }
  }
  if (probe) {
    BenchHandler.prototype.handle = function handle(message) {
      probe.check(message.payload.seq, message.attempts);
      sink.onPayload(message.payload);
    };
  } else if (variant === 'batch') {
    BenchHandler.prototype.handle = function handle(messages) {
      for (let i = 0; i < messages.length; i++) sink.onPayload(messages[i].payload);
      return messages;
    };
  } else if (variant === 'c16') {
    BenchHandler.prototype.handle = async function handle(message) {
      await sleep1();
      sink.onPayload(message.payload);
    };
  }
  if (variant === 'nest') await nestPipeline(lib, common, BenchHandler, sink);
  StreamHandler(cfg.stream, cfg.group, options)(
    BenchHandler.prototype,
    'handle',
    Object.getOwnPropertyDescriptor(BenchHandler.prototype, 'handle'),
  );
  Injectable()(BenchHandler);

  class AppModule {}
  Module({
    imports: [
      EchoStreamModule.forRoot({
        connection: connectionOf(cfg),
        consumerName: 'bench-lib',
        ...(cfg.sharedReads !== undefined ? { sharedReads: cfg.sharedReads } : {}),
      }),
    ],
    providers: [BenchHandler],
  })(AppModule);

  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const loops = loopCounters(app, ConsumerStats);

  if (cfg.mode === 'latency' || cfg.mode === 'idle') {
    await sleep(300); // let the loop create its group and park on its first read
    await send({ type: 'ready' });
  }
  if (cfg.mode === 'latency') {
    const { n } = await next('expect');
    sink.expect(n);
  } else if (cfg.mode === 'idle') {
    await next('stop');
    const errors = loops().errors;
    await app.close();
    return done({ handled: 0, duplicates: 0, errors, client: clientVersion() });
  }
  await sink.finished;
  const before = loops();
  await app.close();
  const client = clientVersion();
  if (!probe)
    return done({ ...sink.result(), errors: before.errors, loopStates: before.states, client });
  // the planned failures are handler errors too: only the others count as errors
  const retry = { ...probe.result(), totalRetries: before.retries };
  return done({
    ...sink.result(),
    errors: before.errors - retry.failed,
    loopStates: before.states,
    retry,
    client,
  });
}

/** The ioredis the library build loads (node's resolution from the build's folder). */
function clientVersion() {
  const req = createRequire(libPath);
  return `ioredis ${req(req.resolve('ioredis/package.json')).version}`;
}

/** The module's `connection`: the URL, or its host and port with a forced RESP version. */
function connectionOf({ url, protocol }) {
  if (!protocol) return url;
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port), protocol };
}

/**
 * The 'nest' variant: `handle(@Payload(new ValidationPipe({ transform: true })) order: BenchOrder)`
 * under `@UseInterceptors(PassThrough)`, written out as the decorator calls TypeScript would emit.
 */
async function nestPipeline(lib, common, BenchHandler, sink) {
  const { IsIn, IsInt, IsString, Min } = await import('class-validator');
  class BenchOrder {}
  IsInt()(BenchOrder.prototype, 'seq');
  Min(0)(BenchOrder.prototype, 'seq');
  IsString()(BenchOrder.prototype, 'sku');
  IsInt()(BenchOrder.prototype, 'qty');
  IsIn(['EUR', 'USD'])(BenchOrder.prototype, 'currency');
  class PassThrough {
    intercept(_context, next) {
      return next.handle();
    }
  }
  common.Injectable()(PassThrough);
  BenchHandler.prototype.handle = function handle(order) {
    sink.onPayload(order);
  };
  const descriptor = Object.getOwnPropertyDescriptor(BenchHandler.prototype, 'handle');
  Reflect.defineMetadata('design:paramtypes', [BenchOrder], BenchHandler.prototype, 'handle');
  lib.Payload(new common.ValidationPipe({ transform: true }))(BenchHandler.prototype, 'handle', 0);
  common.UseInterceptors(PassThrough)(BenchHandler.prototype, 'handle', descriptor);
}

/**
 * Error figures of the running loops: handler errors + dead letters + a loop not `running`.
 * Uses ConsumerStats (docs/observability.md); falls back to the internal registry while stats is not there.
 */
function loopCounters(app, ConsumerStats) {
  let read = null;
  try {
    const stats = ConsumerStats ? app.get(ConsumerStats) : null;
    if (stats && typeof stats.snapshot === 'function') read = () => stats.snapshot();
  } catch {
    // not registered
  }
  if (!read) {
    try {
      const { ConsumerRegistry } = require(join(dirname(libPath), 'echo-stream.registry.js'));
      const registry = app.get(ConsumerRegistry);
      const consumers = [...registry.list()];
      read = () => consumers.map((c) => c.snapshot());
    } catch {
      read = () => [];
    }
  }
  return () => {
    const snaps = read();
    let errors = 0;
    let retries = 0;
    const states = [];
    for (const s of snaps) {
      errors += (s.totalErrors ?? 0) + (s.totalDlq ?? 0) + (s.state === 'running' ? 0 : 1);
      retries += s.totalRetries ?? 0;
      states.push(s.state);
    }
    if (snaps.length === 0) errors++; // no loop at all is an error
    return { errors, states, retries };
  };
}

main().catch(fail);
