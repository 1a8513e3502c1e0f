#!/usr/bin/env node
/**
 * `npm run demo`: builds the sample app (sample/, CommonJS into .sample-dist/), starts a
 * throw-away redis-server when REDIS_URL is unset, runs the sample on PORT (default: a free
 * port) and feeds it:
 * - a steady trickle of orders through `POST /orders`, each under its checkout id, every 10th
 *   posted again 1.5 s later (a checkout retrying after a timeout: billing's `dedup` skips the
 *   copy), a poison order now and then (refused until dead-lettered), a malformed one through
 *   `POST /orders/unchecked` (billing's ValidationPipe rejects it) and undecodable entries
 *   written straight to the stream;
 * - statements of account movements through `POST /ledger/statements` (scripts/lib/demo-ledger.mjs),
 *   numbered per account, some posted twice (idempotent publish absorbs the repeat), which the
 *   partitioned `balances` handler applies in each account's order.
 * It prints the app's log (handled orders, retries, dead letters) and the figures every 5 s. At
 * the end it checks every account's balance against what it posted and exits 1 when one differs,
 * a movement broke its account's order or a repeated publish was written twice.
 *
 *   npm run demo                   # until Ctrl-C
 *   DEMO_SECONDS=20 npm run demo   # stops by itself after 20 s (exit 0)
 *
 * Environment: REDIS_URL (use this server instead of a throw-away one; the demo writes to the
 * streams `orders`, `orders:dlq`, `ledger:p:0` ... `ledger:p:3` and the sample's keys
 * `{sample-ledger}:*`, and creates the groups `billing`, `shipping` and `balances`), PORT, HOST,
 * FAILURE_RATE (default 0.1), DEMO_RATE (orders per second, default 4), DEMO_SECONDS,
 * DEMO_VERBOSE=1 (print Nest's start-up lines and full stacks).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { LedgerTraffic } from './lib/demo-ledger.mjs';
import { freePort, startThrowawayRedis } from './lib/throwaway-redis.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SAMPLE_MAIN = path.join(ROOT, '.sample-dist', 'sample', 'main.js');
const HOST = process.env.HOST || '127.0.0.1';
const RATE = Number(process.env.DEMO_RATE || 4);
const SECONDS = process.env.DEMO_SECONDS ? Number(process.env.DEMO_SECONDS) : undefined;
const VERBOSE = process.env.DEMO_VERBOSE === '1';
const STREAM = 'orders';
const SKUS = ['A-1', 'B-7', 'C-3', 'D-9', 'E-2'];
/** Every Nth order is poison, every Mth tick also writes an undecodable entry (first ones early). */
const POISON_EVERY = 40;
const UNDECODABLE_EVERY = 60;
/** Every Kth tick also posts a malformed order to POST /orders/unchecked (a `rejected` dead letter). */
const MALFORMED_EVERY = 50;
/** Every Rth order is posted again under its id after RETRY_AFTER_MS, as a checkout that timed out. */
const RETRY_ORDER_EVERY = 10;
const RETRY_AFTER_MS = 1500;
/** The ledger's accounts; each tick posts a statement of 2 to 6 movements of the next one. */
const ACCOUNTS = ['acct-1', 'acct-2', 'acct-3', 'acct-4', 'acct-5', 'acct-6'];
/** Tells this run's checkout ids from an earlier run's on the same REDIS_URL. */
const RUN = Date.now().toString(36);

const color = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code, text) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
const say = (text) => console.log(`${paint('1;36', 'demo')} ${text}`);

if (!(RATE > 0 && RATE <= 1000))
  fail(`DEMO_RATE must be a number from 0 to 1000, got ${process.env.DEMO_RATE}`);
if (SECONDS !== undefined && !(SECONDS > 0))
  fail(`DEMO_SECONDS must be a positive number, got ${process.env.DEMO_SECONDS}`);

function fail(message) {
  console.error(`demo: ${message}`);
  process.exit(1);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs a command to completion with its output shown; rejects on a non-zero exit. */
function runVisible(cmd, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, sig) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${sig ?? code}`)),
    );
  });
}

// ---------------------------------------------------------------------------------------------
// What the demo started, stopped in reverse order (app first, then its redis-server).
// ---------------------------------------------------------------------------------------------
const state = {
  base: undefined,
  app: undefined,
  /** The throw-away redis-server (its own exit hook kills it if the demo dies first). */
  redis: undefined,
  client: undefined,
  /** The ledger's producer (scripts/lib/demo-ledger.mjs), once the app is up. */
  ledger: undefined,
  /** Orders posted twice under one checkout id. */
  ordersRetried: 0,
  timers: [],
};
let stopping;

/** Last resort on any exit: nothing the demo started outlives it. */
process.on('exit', () => {
  const child = state.app;
  if (child && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

function waitExit(child, ms) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return Promise.race([
    new Promise((r) => child.once('exit', () => r(true))),
    sleep(ms).then(() => false),
  ]);
}

async function stop(reason, code = 0) {
  if (stopping) return stopping;
  stopping = (async () => {
    say(reason);
    for (const t of state.timers) clearInterval(t);
    if (state.base && state.app && state.app.exitCode === null) {
      try {
        const summary = await finalSummary();
        say(paint('33', `final: ${figures(summary)}`));
        const broken = state.ledger?.problems(summary) ?? [];
        if (broken.length > 0) {
          for (const line of broken) say(paint('1;31', line));
          code = code || 1;
        } else if (state.ledger?.posted) {
          say(
            paint(
              '32',
              `ledger checked: ${state.ledger.posted} movements applied in each account's order, ` +
                `every balance as posted`,
            ),
          );
        }
      } catch {
        // no figures
      }
    }
    if (state.app && state.app.exitCode === null) {
      state.app.kill('SIGTERM'); // the sample's enableShutdownHooks(): loops stop, app.close()
      if (!(await waitExit(state.app, 15_000))) {
        say('the app did not stop within 15 s: killing it');
        state.app.kill('SIGKILL');
        await waitExit(state.app, 2000);
      }
    }
    if (state.client) state.client.disconnect();
    if (state.redis) {
      await state.redis.stop();
      say('throw-away redis-server stopped');
    }
    process.exit(code);
  })();
  return stopping;
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => void stop(`${sig}: stopping`));
}

// ---------------------------------------------------------------------------------------------

async function startRedis() {
  try {
    // detached: Ctrl-C in the terminal reaches the demo only; it stops the app, then this server.
    state.redis = await startThrowawayRedis({ tmpPrefix: 'echo-stream-demo-', detached: true });
  } catch (err) {
    if (err.code === 'ENOENT') err.message += ' (or set REDIS_URL to use a running server)';
    throw err;
  }
  return state.redis.url;
}

const NOISE = /\[(InstanceLoader|RoutesResolver|RouterExplorer|NestFactory)\]/;
// eslint-disable-next-line no-control-regex -- the escape that starts a terminal colour
const ANSI = /\x1b\[[0-9;]*m/g;

/** Prints the app's log lines: start-up noise and stack frames only with DEMO_VERBOSE=1. */
function relay(stream, onLine) {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const plain = line.replace(ANSI, '');
      onLine(plain);
      if (!VERBOSE && (NOISE.test(plain) || /^\s+at /.test(plain))) continue;
      console.log(`${paint('2', 'app ')} ${line}`);
    }
  });
}

async function startApp(redisUrl, port) {
  const env = { ...process.env, REDIS_URL: redisUrl, PORT: String(port), HOST };
  delete env.NODE_OPTIONS; // npm test's --experimental-vm-modules is not for the app
  if (!color) env.NO_COLOR = '1';
  const child = spawn(process.execPath, [SAMPLE_MAIN], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  state.app = child;
  let listening = false;
  const ready = new Promise((resolve, reject) => {
    relay(child.stdout, (line) => {
      if (!listening && /listening on http/.test(line)) {
        listening = true;
        resolve();
      }
    });
    relay(child.stderr, () => undefined);
    child.once('exit', (code, sig) => {
      if (!listening) reject(new Error(`the sample app exited during start (${sig ?? code})`));
      else if (!stopping) void stop(`the sample app exited (${sig ?? code})`, 1);
    });
  });
  const timeout = sleep(60_000).then(() => {
    throw new Error('the sample app did not start listening within 60 s');
  });
  await Promise.race([ready, timeout]);
}

async function postOrder(base, order, path = '/orders') {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(order),
  });
  if (res.status !== 202) throw new Error(`POST ${path} -> ${res.status} ${await res.text()}`);
  return res.json();
}

/** Two lines from the sample's summary (`GET /stats`); the loops are the dashboard's. */
function figures(s) {
  const reasons = {};
  for (const d of s.deadLetters.recent) reasons[d.reason] = (reasons[d.reason] ?? 0) + 1;
  const recent = Object.entries(reasons)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');
  const l = s.ledger;
  return (
    `orders charged ${s.billing.charged}, duplicates skipped ${s.billing.duplicates} ` +
    `(${state.ordersRetried} posted twice), dead letters received ${s.deadLetters.total}` +
    (recent ? ` (of the last ${s.deadLetters.recent.length}: ${recent})` : '') +
    `\n     ledger: movements applied ${l.applied} (${state.ledger?.posted ?? 0} posted), ` +
    `order violations ${l.violations}, redeliveries ignored ${l.replays}, ` +
    `${state.ledger?.figures() ?? 'no movements yet'}, partitions owned [${l.ownedHere.join(',')}]`
  );
}

async function summaryOf(base) {
  const res = await fetch(`${base}/stats`, { signal: AbortSignal.timeout(2000) });
  if (!res.ok) throw new Error(`GET /stats -> ${res.status}`);
  return res.json();
}

/** The summary once every movement posted is applied (or after 5 s). */
async function finalSummary() {
  if (!state.ledger) return summaryOf(state.base);
  return state.ledger.applied(() => summaryOf(state.base));
}

async function main() {
  const t0 = Date.now();
  say('building the sample (tsc -p sample/tsconfig.json -> .sample-dist/)');
  await runVisible(process.execPath, [
    path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    'sample/tsconfig.json',
  ]);

  let redisUrl = process.env.REDIS_URL;
  if (redisUrl) {
    say(
      `using REDIS_URL=${redisUrl.replace(/\/\/([^@/]*)@/, '//***@')}: writes to the streams 'orders', 'orders:dlq' and 'ledger:p:*'`,
    );
  } else {
    redisUrl = await startRedis();
    say(`started a throw-away redis-server on ${redisUrl} (stopped when the demo ends)`);
  }
  const port = process.env.PORT ? Number(process.env.PORT) : await freePort();
  await startApp(redisUrl, port);
  const base = `http://${HOST === '0.0.0.0' ? '127.0.0.1' : HOST}:${port}`;
  state.base = base;
  state.client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  state.client.on('error', () => undefined);
  state.ledger = new LedgerTraffic(base, ACCOUNTS);
  state.ledger.seed(await summaryOf(base));

  console.log('');
  say(
    paint(
      '1',
      `dashboard:   ${base}/echo-stream   (consumer loops, groups, pending, dead letters)`,
    ),
  );
  say(paint('1', `sample page: ${base}/   (orders, the ledger's balances per account)`));
  say(`its JSON:    ${base}/stats`);
  say(`Prometheus:  ${base}/metrics`);
  const cliBuilt = existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'));
  say(
    `CLI:         npx echo-stream --url ${redisUrl.replace(/\/\/([^@/]*)@/, '//***@')} inspect ledger` +
      `   (the partitions and their owners${cliBuilt ? '' : '; npm run build first'})`,
  );
  say(
    `publishing ~${RATE} orders/s through POST /orders (FAILURE_RATE ${process.env.FAILURE_RATE ?? 0.1}), ` +
      `every ${RETRY_ORDER_EVERY}th posted twice, a poison order every ${POISON_EVERY}, a malformed one every ${MALFORMED_EVERY} ` +
      `and an undecodable entry every ${UNDECODABLE_EVERY}; statements of movements of ${ACCOUNTS.length} accounts ` +
      `through POST /ledger/statements; ` +
      (SECONDS ? `stopping after ${SECONDS} s` : 'Ctrl-C to stop'),
  );
  console.log('');

  let n = 0;
  let publishErrors = 0;
  const publishTick = async () => {
    n++;
    try {
      if (n % UNDECODABLE_EVERY === 4) {
        // A foreign producer's mistake: `data` is not JSON. Dead-lettered at once (decode_error).
        const entryId = await state.client.xadd(
          STREAM,
          '*',
          'id',
          `demo-bad-${n}`,
          'data',
          `{"sku": "X-${n}", oops`,
        );
        say(`wrote an undecodable entry ${entryId} (id demo-bad-${n})`);
      }
      if (n % MALFORMED_EVERY === 6) {
        // Published as-is; billing's ValidationPipe refuses it: dead-lettered at once (rejected).
        const { id } = await postOrder(base, { sku: '', qty: 'two' }, '/orders/unchecked');
        say(`posted a malformed order ${id}: billing's ValidationPipe rejects it (dead letter)`);
      }
      state.ledger.burst(2 + (n % 5));
      const poison = n % POISON_EVERY === 2;
      const order = {
        id: `co-${RUN}-${n}`,
        sku: SKUS[n % SKUS.length],
        qty: 1 + (n % 4),
        ...(poison ? { poison: true } : {}),
      };
      const { id } = await postOrder(base, order);
      if (poison)
        say(`published a poison order ${id}: billing refuses it 3 times, then it is dead-lettered`);
      else if (n % RETRY_ORDER_EVERY === 5) {
        // the checkout timed out and posts the same order again: written twice, charged once
        state.ordersRetried++;
        state.timers.push(
          setTimeout(() => void postOrder(base, order).catch(() => undefined), RETRY_AFTER_MS),
        );
      }
    } catch (err) {
      if (!stopping && ++publishErrors <= 3) say(`publish failed: ${err.message}`);
    }
  };
  state.timers.push(setInterval(() => void publishTick(), Math.max(1, Math.round(1000 / RATE))));
  state.timers.push(
    setInterval(async () => {
      try {
        const summary = await summaryOf(base);
        if (!stopping) say(paint('33', figures(summary)));
      } catch {
        // the app is stopping
      }
    }, 5000),
  );
  if (SECONDS) {
    state.timers.push(
      setTimeout(
        () =>
          void stop(
            `DEMO_SECONDS=${SECONDS} reached (${((Date.now() - t0) / 1000).toFixed(0)} s in all): stopping`,
          ),
        SECONDS * 1000,
      ),
    );
  }
}

main().catch((err) => void stop(`failed: ${err.message}`, 1));
