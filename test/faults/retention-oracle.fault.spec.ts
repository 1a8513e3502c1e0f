/**
 * Retention oracle (issue 14): producers write 50,000 entries while two groups consume them at
 * different speeds (`slow` naps every 100th entry) in two app PROCESSES
 * (`support/retention-process.mjs`, the built package), each running retention every 200 ms with
 * `maxLen` 1,000 and an archive method. Halfway through, the process holding the retention lock
 * shuts down (SIGTERM) and the other one takes over.
 *
 * Invariants checked, from the shared ledger and from Redis:
 * - none trimmed unprocessed: every archived entry (archived just before its trim) had been handled
 *   by both groups no later than it was archived; in the end both groups handled every entry and
 *   nothing is pending;
 * - the stream ends short: exactly the newest 1,000 entries are left;
 * - the archive received every trimmed entry exactly once across both processes, oldest first,
 *   and both processes archived (the lock moved).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { fill } from '../support/lifecycle-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import { assertBuilt, makeWorkDir, stopAllConsumerProcesses } from './support/consumer-fleet';

const SCRIPT = path.join('test', 'faults', 'support', 'retention-process.mjs');
const STREAM = 'retention-oracle';
const TOTAL = 50_000;
const MAX_LEN = 1000;

let server: RedisServer;
let redis: Redis;
let ledger: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  assertBuilt();
  server = await RedisServer.start();
  redis = server.client();
  ledger = path.join(makeWorkDir(), 'retention.ledger');
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await stopAllConsumerProcesses();
  await stopAllRedisServers();
});

/** Starts one app process; resolves with it once it printed READY. */
async function startApp(name: string): Promise<ChildProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_OPTIONS; // jest's --experimental-vm-modules is not for the child
  Object.assign(env, {
    REDIS_URL: server.url,
    STREAM,
    CONSUMER_NAME: name,
    LEDGER: ledger,
    MAX_LEN: String(MAX_LEN),
  });
  const child = spawn(process.execPath, [SCRIPT], { cwd: process.cwd(), env });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + String(chunk)).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} not READY:\n${stderr}`)), 20_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      if (String(chunk).includes('READY')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${name} exited ${code}:\n${stderr}`)));
  });
  return child;
}

interface Ledger {
  handled: { fast: Map<string, number>; slow: Map<string, number> };
  archived: Array<{ id: string; entryId: string; at: number; pid: number }>;
}

function readLedger(): Ledger {
  const out: Ledger = { handled: { fast: new Map(), slow: new Map() }, archived: [] };
  for (const line of fs.readFileSync(ledger, 'utf8').split('\n')) {
    const parts = line.split(' ');
    if (parts[0] === 'H') {
      const seen = out.handled[parts[1] as 'fast' | 'slow'];
      if (!seen.has(parts[2])) seen.set(parts[2], Number(parts[3]));
    } else if (parts[0] === 'A') {
      out.archived.push({
        id: parts[1],
        entryId: parts[2],
        at: Number(parts[3]),
        pid: Number(parts[4]),
      });
    }
  }
  return out;
}

it('every entry is handled by both groups, the stream ends at maxLen, each trimmed entry archived once', async () => {
  const apps = [await startApp('app-a'), await startApp('app-b')];

  const entryIds: string[] = [];
  for (let from = 0; from < TOTAL; from += 1000) {
    entryIds.push(...(await fill(redis, STREAM, 1000, from)));
    await sleep(20);
    if (from === TOTAL / 2) {
      // halfway, the process holding the lock shuts down gracefully (it releases the lock)
      const holderPid = await waitFor(() => readLedger().archived.at(-1)?.pid, {
        message: 'a first archive call',
      });
      const holder = apps.find((child) => child.pid === holderPid)!;
      const exited = new Promise((resolve) => holder.once('exit', resolve));
      holder.kill('SIGTERM');
      await exited;
    }
  }
  await waitFor(
    () => {
      const { handled } = readLedger();
      return handled.fast.size === TOTAL && handled.slow.size === TOTAL;
    },
    { timeoutMs: 120_000, intervalMs: 500, message: 'both groups handled every entry' },
  );
  await waitFor(async () => (await redis.xlen(STREAM)) === MAX_LEN, {
    timeoutMs: 20_000,
    message: 'the stream trimmed to maxLen',
  });
  await sleep(600); // a few more intervals: nothing more may go
  const left = (await redis.xrange(STREAM, '-', '+')).map(([id]) => id);
  expect(left).toEqual(entryIds.slice(TOTAL - MAX_LEN));
  for (const group of ['fast', 'slow']) {
    const [pending] = (await redis.xpending(STREAM, group)) as [number];
    expect(pending).toBe(0);
  }

  const { handled, archived } = readLedger();
  const unprocessed = archived.filter(
    (a) =>
      !(
        (handled.fast.get(a.id) ?? Infinity) <= a.at && (handled.slow.get(a.id) ?? Infinity) <= a.at
      ),
  );
  expect(unprocessed).toEqual([]);
  const archivedIds = archived.map((a) => a.entryId);
  expect(new Set(archivedIds).size).toBe(archivedIds.length); // no duplicates
  expect(archivedIds).toEqual(entryIds.slice(0, TOTAL - MAX_LEN)); // every trimmed one, in order
  expect(new Set(archived.map((a) => a.pid)).size).toBe(2); // the lock moved to the other process
}, 180_000);
