// The many-handlers workload's child (issue 15, docs/scale.md): this library in a Nest application
// context with `cfg.streams.length` handlers in group `cfg.group`, one per stream, all methods of
// ONE provider class built programmatically (`StreamHandler(...)(proto, key, descriptor)`), the
// same synchronous per-entry handler as the `lib` contender. Module defaults, except
// `sharedReads` when the runner passes one (cfg.sharedReads: true | false; absent = the module's
// default).
//
// cfg.mode 'boot': reports boot figures ('ready'), waits for 'stop' (the runner counts
//   connections and idle commands meanwhile), then closes and reports how long app.close() took.
// cfg.mode 'drain': handles cfg.n pre-filled entries (payload `seq` unique across streams), then
//   reports like every drain contender.
import 'reflect-metadata';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { cfg, done, fail, next, send, Sink, sleep } from '../lib/child.mjs';

const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const libPath = cfg.lib ?? join(root, 'dist/index.js');

async function main() {
  const lib = require(libPath);
  const { Injectable, Module } = await import('@nestjs/common');
  const { NestFactory, NestApplicationContext } = await import('@nestjs/core');
  const { EchoStreamModule, StreamHandler, ConsumerStats } = lib;
  const streams = cfg.streams;
  const sink = new Sink(cfg);

  class ManyHandlers {}
  streams.forEach((stream, i) => {
    const key = `h${String(i).padStart(3, '0')}`;
    Object.defineProperty(ManyHandlers.prototype, key, {
      value: function handle(message) {
        sink.onPayload(message.payload);
      },
      writable: true,
      configurable: true,
      enumerable: false,
    });
    const descriptor = Object.getOwnPropertyDescriptor(ManyHandlers.prototype, key);
    StreamHandler(stream, cfg.group)(ManyHandlers.prototype, key, descriptor);
  });
  Injectable()(ManyHandlers);

  const moduleOptions = { connection: cfg.url, consumerName: 'bench-many' };
  if (typeof cfg.sharedReads === 'boolean') moduleOptions.sharedReads = cfg.sharedReads;
  class AppModule {}
  Module({
    imports: [EchoStreamModule.forRoot(moduleOptions)],
    providers: [ManyHandlers],
  })(AppModule);

  // NOTE: createApplicationContext() scans the modules, then calls init() itself; the boot figure
  // starts at that init() call (lifecycle hooks: discovery, then the loops' start), so a
  // timestamp is taken when it begins. The bench only, never the library, wraps it.
  let initAt = 0;
  const init = NestApplicationContext.prototype.init;
  NestApplicationContext.prototype.init = function timedInit(...args) {
    if (initAt === 0) initAt = performance.now();
    return init.apply(this, args);
  };
  const createdAt = performance.now();
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const initDoneAt = performance.now();
  const stats = app.get(ConsumerStats);
  const loops = () => stats.snapshot();

  if (cfg.mode === 'boot') {
    // every loop 'running': it ensured its group, drained its own PEL and swept once
    for (;;) {
      const snaps = loops();
      if (snaps.length === streams.length && snaps.every((s) => s.state === 'running')) break;
      await sleep(1);
    }
    const readyAt = performance.now();
    await send({
      type: 'ready',
      bootMs: readyAt - initAt,
      initMs: initDoneAt - initAt,
      contextMs: readyAt - createdAt,
    });
    await next('stop');
    const before = errorsOf(loops(), streams.length);
    const closeAt = performance.now();
    await app.close();
    const closeMs = performance.now() - closeAt;
    return done({ handled: 0, duplicates: 0, ...before, closeMs });
  }
  await sink.finished;
  const before = errorsOf(loops(), streams.length);
  await app.close();
  return done({ ...sink.result(), ...before });
}

/** Handler errors + dead letters + a loop not `running` (+ a missing loop) count as errors. */
function errorsOf(snaps, expected) {
  let errors = Math.max(0, expected - snaps.length);
  const states = {};
  for (const s of snaps) {
    errors += (s.totalErrors ?? 0) + (s.totalDlq ?? 0) + (s.state === 'running' ? 0 : 1);
    states[s.state] = (states[s.state] ?? 0) + 1;
  }
  return { errors, loopStates: states };
}

main().catch(fail);
