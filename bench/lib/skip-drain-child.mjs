// One drain of bench/effectively-once.mjs, in a process of its own (every variant starts as cold
// as the others): one @StreamHandler (per entry, defaults) of the variant drains the group from its
// first handler call to an empty PEL. The skip variants' handler does nothing (synchronous); the
// pipeline stages write each entry on to the stream `${stream}-out-${group}`: `stage` awaits
// StreamProducer.publish (at-least-once), `exactlyOnce` writes through m.tx (committed with the
// XACK); `deleteOnAck` removes each entry with its XACK. Config: BENCH_CHILD (JSON: lib, url,
// stream, group, variant, n, redisPid, serverFeatures). Answers one IPC message: { rate, nodeCpuUs, redisCpuUs, handled,
// pending, procCpuSeconds } (µs of CPU per entry from the first handler call to the empty PEL;
// the process's whole CPU) or { fatal }.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(join(root, 'package.json'));
const cfg = JSON.parse(process.env.BENCH_CHILD ?? '{}');

/** The variants measured, by name: the same handler, one option apart. */
const VARIANTS = {
  plain: {},
  dedup: { dedup: true },
  newerWins: { newerWins: (m) => m.payload.account },
  stage: {},
  exactlyOnce: { exactlyOnce: true },
  deleteOnAck: { deleteOnAck: true },
  // a dead peer's entries (bench/server-features.mjs): idle 3 s after its read, then taken by the
  // sweep every second (the Redis 7 path), or only by the reads (CLAIM: no second sweep for ten
  // minutes, so the reads alone bring them)
  reclaimBySweep: { minIdleMs: 3000, claimIntervalMs: 1000 },
  reclaimByRead: { minIdleMs: 3000, claimIntervalMs: 600_000 },
};
/** What the handler of a variant does besides counting; none: nothing. */
const OUTPUTS = {
  stage: (producer, m, out) => producer.publish(out, m.payload),
  exactlyOnce: (_producer, m, out) => void m.tx.publish(out, m.payload),
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds (user + system) a process used so far (Linux /proc; `NaN` elsewhere). */
function pidCpuSeconds(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ: 100 on Linux
  } catch {
    return NaN;
  }
}

async function main() {
  require('reflect-metadata');
  const { NestFactory } = require('@nestjs/core');
  const { Injectable, Module } = require('@nestjs/common');
  const { Redis } = require('ioredis');
  const { EchoStreamModule, StreamHandler, StreamProducer } = require(cfg.lib);
  const output = OUTPUTS[cfg.variant];
  const out = `${cfg.stream}-out-${cfg.group}`;
  let handled = 0;
  let startedAt = 0;
  let cpu0 = null;
  let redis0 = 0;
  class Handler {
    constructor(producer) {
      this.producer = producer;
    }
    handle(m) {
      if (handled++ === 0) {
        startedAt = performance.now();
        cpu0 = process.cpuUsage();
        redis0 = pidCpuSeconds(cfg.redisPid);
      }
      if (output) return output(this.producer, m, out);
    }
  }
  Reflect.defineMetadata('design:paramtypes', [StreamProducer], Handler);
  StreamHandler(cfg.stream, cfg.group, VARIANTS[cfg.variant])(
    Handler.prototype,
    'handle',
    Object.getOwnPropertyDescriptor(Handler.prototype, 'handle'),
  );
  Injectable()(Handler);
  class DrainModule {}
  Module({
    imports: [
      EchoStreamModule.forRoot({
        connection: cfg.url,
        serverFeatures: cfg.serverFeatures ?? 'auto',
      }),
    ],
    providers: [Handler],
  })(DrainModule);
  const admin = new Redis(cfg.url);
  const app = await NestFactory.createApplicationContext(DrainModule, { logger: false });
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
    const redisSeconds = pidCpuSeconds(cfg.redisPid) - redis0;
    const whole = process.cpuUsage();
    return {
      procCpuSeconds: (whole.user + whole.system) / 1e6,
      rate: cfg.n / seconds,
      nodeCpuUs: (cpu.user + cpu.system) / cfg.n,
      redisCpuUs: (redisSeconds * 1e6) / cfg.n,
      handled,
      pending: Number(pending),
    };
  } finally {
    await app.close();
    admin.disconnect();
  }
}

main().then(
  (result) => process.send({ type: 'result', ...result }, () => process.exit(0)),
  (err) =>
    process.send({ type: 'result', fatal: String(err?.stack ?? err) }, () => process.exit(1)),
);
