'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS app */
/**
 * The app of the upgrade test (test/upgrade/run.mjs). The runner copies this directory into two
 * temp dirs and installs the v0.1.0 tarball in one and the current tarball in the other (same
 * Nest 11), so `require('nestjs-echo-stream')` is the old package in one and the new one in the
 * other. Decorators are applied by hand (no compiler), as in test/compat/cjs-nest11. Only options
 * v0.1.0 already had are used.
 *
 *   node main.js consume   a consumer process (until SIGTERM): the handlers below
 *   node main.js publish   publishes the entries of $PLAN with StreamProducer, writes $OUT, exits
 *   node main.js admin     lists the dead letters of both streams with EchoStreamAdmin.deadLetters,
 *                          redrives them with EchoStreamAdmin.redrive, lists again; writes $OUT
 *
 * Env: REDIS_URL (all), NAME (the consumer name) and ROLE ('old' / 'new') for consume, PLAN and
 * OUT for publish, OUT for admin, HANDLE_MS (default 25) for consume.
 *
 * A handled entry is recorded with one RPUSH of JSON to `upg:handled`, awaited before the handler
 * returns (so before its XACK): { proc, role, stream ('plain' | 'part'), entryId, id, pid, origin,
 * attempts, redriven, and on the partitioned stream key, seq, partition }. An entry whose payload
 * says `fail: true` throws on every delivery until the runner sets `upg:healed` (it does so once
 * every such entry is a dead letter, before it redrives them): so it fails only when delivered
 * from its original publish, and a redriven copy is handled. Every dead letter a process's
 * `@DeadLetter()` receives is recorded in `upg:dead`.
 *
 * Stdout: `READY <name> <pid>` once the loops started; `CLOSED <name>` after app.close() on SIGTERM
 * (then exit 0).
 */
require('reflect-metadata');
const { Injectable, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const {
  DeadLetter,
  EchoStreamAdmin,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
} = require('nestjs-echo-stream');
const { Redis } = require('ioredis');
const fs = require('node:fs');

const PLAIN = 'upg-plain';
const PART = 'upg-part';
const GROUP = 'g';
const PARTITIONS = 4;
/** Handler options both versions have (v0.1.0 README "Options"). */
const COMMON = {
  batchSize: 10,
  blockMs: 1000,
  minIdleMs: 3000,
  maxDeliveries: 3,
  retry: { type: 'fixed', delayMs: 100 },
};
const PLAIN_OPTIONS = COMMON;
const PART_OPTIONS = { ...COMMON, partitions: PARTITIONS, partitionLeaseMs: 2000, concurrency: 2 };

const mode = process.argv[2];
const REDIS_URL = required('REDIS_URL');

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`main.js: ${name} is required`);
    process.exit(2);
  }
  return value;
}

function say(line) {
  fs.writeSync(1, `${line}\n`); // synchronous: a SIGKILL right after cannot swallow it
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function decorate(cls, method, ...decorators) {
  for (const d of decorators)
    d(cls.prototype, method, Object.getOwnPropertyDescriptor(cls.prototype, method));
}

async function consume() {
  const NAME = required('NAME');
  const ROLE = required('ROLE');
  const HANDLE_MS = Number(process.env.HANDLE_MS ?? 25);
  const rec = new Redis(REDIS_URL, { lazyConnect: false });

  async function record(stream, m, extra = {}) {
    const p = m.payload;
    if (p.fail && (await rec.get('upg:healed')) === null) {
      throw new Error(`planned failure of ${p.pid}`);
    }
    await rec.rpush(
      'upg:handled',
      JSON.stringify({
        proc: NAME,
        role: ROLE,
        stream,
        entryId: m.entryId,
        id: m.id,
        pid: p.pid,
        origin: p.origin,
        attempts: m.attempts,
        redriven: p.fail === true,
        ...extra,
      }),
    );
  }

  class Handlers {
    async plain(m) {
      await sleep(HANDLE_MS);
      await record('plain', m);
    }
    async part(m) {
      await sleep(HANDLE_MS);
      if (m.key !== m.payload.key) throw new Error(`key ${m.key} != payload key ${m.payload.key}`);
      await record('part', m, { key: m.key, seq: m.payload.seq, partition: m.partition });
    }
    async dead(letter) {
      let pid;
      try {
        pid = JSON.parse(letter.fields.data).pid;
      } catch {
        pid = undefined;
      }
      await rec.rpush(
        'upg:dead',
        JSON.stringify({
          proc: NAME,
          role: ROLE,
          stream: letter.stream,
          entryId: letter.entryId,
          id: letter.id,
          pid,
          reason: letter.reason,
          attempts: letter.attempts,
        }),
      );
    }
  }
  decorate(Handlers, 'plain', StreamHandler(PLAIN, GROUP, PLAIN_OPTIONS));
  decorate(Handlers, 'part', StreamHandler(PART, GROUP, PART_OPTIONS));
  decorate(Handlers, 'dead', DeadLetter());
  Injectable()(Handlers);

  class AppModule {}
  Module({
    imports: [
      EchoStreamModule.forRoot({
        connection: REDIS_URL,
        consumerName: NAME,
        shutdownTimeoutMs: 5000,
      }),
    ],
    providers: [Handlers],
  })(AppModule);

  const app = await NestFactory.createApplicationContext(AppModule, {
    logger: ['error', 'warn', 'log'],
  });
  let closing = false;
  process.on('SIGTERM', () => {
    if (closing) return;
    closing = true;
    app
      .close()
      .then(() => rec.quit())
      .then(() => {
        say(`CLOSED ${NAME}`);
        process.exit(0);
      })
      .catch((err) => {
        console.error(err);
        process.exit(1);
      });
  });
  say(`READY ${NAME} ${process.pid}`);
}

/** A Nest app context with the module and no handlers (nothing consumed). */
async function bareApp() {
  class BareModule {}
  Module({
    imports: [EchoStreamModule.forRoot({ connection: REDIS_URL, autoStart: false })],
  })(BareModule);
  return NestFactory.createApplicationContext(BareModule, { logger: ['error', 'warn'] });
}

async function publish() {
  const plan = JSON.parse(fs.readFileSync(required('PLAN'), 'utf8'));
  const out = required('OUT');
  const app = await bareApp();
  const producer = app.get(StreamProducer);
  const receipts = [];
  // one at a time: entries of one key are written in the order of their seq
  for (const item of plan) {
    const receipt =
      item.key === undefined
        ? await producer.publish(item.stream, item.payload)
        : await producer.publish(item.stream, item.payload, {
            key: item.key,
            partitions: PARTITIONS,
          });
    receipts.push({ pid: item.payload.pid, id: receipt.id, entryId: receipt.entryId });
  }
  await app.close();
  fs.writeFileSync(out, JSON.stringify(receipts));
  say(`PUBLISHED ${receipts.length}`);
}

async function admin() {
  const out = required('OUT');
  const app = await bareApp();
  const adm = app.get(EchoStreamAdmin);
  const listAll = async (stream) => {
    const all = [];
    for (let after; ;) {
      const page = await adm.deadLetters(
        stream,
        after === undefined ? { count: 100 } : { count: 100, after },
      );
      all.push(...page);
      if (page.length < 100) return all;
      after = page[page.length - 1].entryId;
    }
  };
  const result = { before: {}, redriven: {}, after: {} };
  for (const stream of [PLAIN, PART]) result.before[stream] = await listAll(stream);
  for (const stream of [PLAIN, PART]) result.redriven[stream] = await adm.redrive(stream);
  for (const stream of [PLAIN, PART]) result.after[stream] = await listAll(stream);
  await app.close();
  fs.writeFileSync(out, JSON.stringify(result));
  say('ADMIN done');
}

const modes = { consume, publish, admin };
if (!modes[mode]) {
  console.error(`main.js: mode must be one of ${Object.keys(modes).join(', ')}, got ${mode}`);
  process.exit(2);
}
modes[mode]()
  .then(() => {
    if (mode !== 'consume') process.exit(0);
  })
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
