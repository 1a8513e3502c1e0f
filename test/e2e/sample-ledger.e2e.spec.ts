/**
 * The sample's partitioned ledger (sample/ledger/) against a throw-away redis-server: the book's
 * order check itself; one instance applying an account's movements and a statement (several in
 * one call), each posted again absorbed by idempotent publish (same entry ids, written once); two
 * instances of the sample app sharing the ledger's 4 partitions while bursts of movements come in
 * through `POST /ledger/movements` (a backlog built while the group is paused, the second instance
 * joining, the first leaving mid-burst): every balance as posted, 0 order violations, nothing
 * redelivered, every repeat absorbed; the dashboard and `echo-stream inspect ledger` show who owns
 * which partition. The CLI runs from dist/ (`npm run build` first).
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import type { Redis } from 'ioredis';
import { partitionOf, partitionStreamOf, type OverviewView } from '../../lib';
import { AppModule } from '../../sample/app.module';
import { SampleConfig } from '../../sample/config';
import { LEDGER_PARTITIONS, LedgerBook, type Movement } from '../../sample/ledger';
import type { SampleSummary } from '../../sample/stats/sample-summary.service';
import { runCliProcess } from '../support/cli-process';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
const apps = new Map<string, INestApplication>();

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await Promise.all([...apps.values()].map((app) => app.close()));
  redis?.disconnect();
  await stopAllRedisServers();
});

/** One instance of the sample app, named `name` in every group, with a registry of its own. */
async function startInstance(name: string): Promise<string> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(SampleConfig)
    .useValue(new SampleConfig({ redisUrl: server.url, failureRate: 0, consumerName: name }))
    .overrideProvider(Registry)
    .useValue(new Registry())
    .compile();
  const app = moduleRef.createNestApplication({ logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  apps.set(name, app);
  const { port } = app.getHttpServer().address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

async function stopInstance(name: string): Promise<void> {
  await apps.get(name)?.close();
  apps.delete(name);
}

async function summary(base: string): Promise<SampleSummary> {
  const res = await fetch(`${base}/stats`);
  expect(res.status).toBe(200);
  return (await res.json()) as SampleSummary;
}

/** The shared book starts empty for the next test (its figures are the whole book's). */
async function emptyBook(): Promise<void> {
  await redis.del('{sample-ledger}:seq', '{sample-ledger}:balances', '{sample-ledger}:figures');
}

async function post(
  base: string,
  body: unknown,
  route: 'movements' | 'statements' = 'movements',
): Promise<Response> {
  return fetch(`${base}/ledger/${route}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

it("the book applies an account's next movement, ignores one applied already and counts one out of order", async () => {
  const book = new LedgerBook(new SampleConfig({ redisUrl: server.url }));
  try {
    const apply = (seq: number, amount: number) => book.apply({ account: 'book-1', seq, amount });
    expect(await apply(1, 500)).toEqual({ verdict: 'applied', last: 0 });
    expect(await apply(2, -200)).toEqual({ verdict: 'applied', last: 1 });
    expect(await apply(2, -200)).toEqual({ verdict: 'replay', last: 2 }); // redelivered
    expect(await apply(4, 1000)).toEqual({ verdict: 'out_of_order', last: 2 }); // 3 skipped
    expect(await apply(3, 50)).toEqual({ verdict: 'replay', last: 4 }); // late: not applied
    const figures = await book.figures();
    expect(figures).toMatchObject({ applied: 3, replays: 2, violations: 1, accounts: 1 });
    expect(figures.balances).toEqual([{ account: 'book-1', seq: 4, balance: 1300 }]);
  } finally {
    await book.onApplicationShutdown();
    await emptyBook();
  }
});

it('one instance applies movements and statements per account; one posted again is written once', async () => {
  const base = await startInstance('sample-one');
  const movements = [1, 2, 3].map((seq) => ({ account: 'e2e-http', seq, amount: seq * 100 }));
  const receipts: string[] = [];
  for (const m of movements) {
    const res = await post(base, m);
    expect(res.status).toBe(202);
    receipts.push(((await res.json()) as { entryId: string }).entryId);
  }
  // posted again after a lost answer: the first write's receipt, nothing written
  const again = (await (await post(base, movements[2])).json()) as { entryId: string };
  expect(again.entryId).toBe(receipts[2]);
  const view = await waitFor(
    async () => {
      const v = await summary(base);
      return v.ledger.balances.find((b) => b.account === 'e2e-http')?.seq === 3 ? v : null;
    },
    { message: 'the ledger applied the 3 movements' },
  ).then((v) => v!);
  expect(view.ledger.balances.find((b) => b.account === 'e2e-http')).toEqual({
    account: 'e2e-http',
    seq: 3,
    balance: 600,
    partition: partitionOf('e2e-http', 4),
  });
  expect(view.ledger).toMatchObject({
    stream: 'ledger',
    partitions: 4,
    violations: 0,
    replays: 0,
  });
  expect(view.ledger.ownedHere).toEqual([0, 1, 2, 3]);
  const partition = partitionStreamOf('ledger', partitionOf('e2e-http', 4));
  expect(
    (await redis.xrange(partition, '-', '+')).filter(([, f]) => f.includes('e2e-http')),
  ).toHaveLength(3);

  // a statement: movements 4..8 in one call, in order; posted again, it writes none of them
  const statement = {
    account: 'e2e-http',
    movements: [4, 5, 6, 7, 8].map((seq) => ({ seq, amount: -seq })),
  };
  const first = await post(base, statement, 'statements');
  expect(first.status).toBe(202);
  const firstIds = ((await first.json()) as Array<{ entryId: string }>).map((r) => r.entryId);
  const repeat = await post(base, statement, 'statements');
  expect(((await repeat.json()) as Array<{ entryId: string }>).map((r) => r.entryId)).toEqual(
    firstIds,
  );
  const after = await waitFor(
    async () => {
      const v = await summary(base);
      return v.ledger.balances.find((b) => b.account === 'e2e-http')?.seq === 8 ? v : null;
    },
    { message: 'the ledger applied the statement' },
  ).then((v) => v!);
  expect(after.ledger.balances.find((b) => b.account === 'e2e-http')?.balance).toBe(600 - 30);
  expect(after.ledger).toMatchObject({ applied: 8, violations: 0, replays: 0 });
  expect(
    (await redis.xrange(partition, '-', '+')).filter(([, f]) => f.includes('e2e-http')),
  ).toHaveLength(8);
  await stopInstance('sample-one');
  await emptyBook();
});

describe('two instances of the sample sharing the ledger', () => {
  const ACCOUNTS = Array.from({ length: 8 }, (_, i) => `acct-${i + 1}`);
  const PER_ACCOUNT = 36;
  const REPEAT_EVERY = 6;
  /** Where movements are posted: one instance at a time publishes them all (see LedgerController). */
  let producer = '';
  const expected = new Map<string, number>();
  const repeats: Array<{ first: string; again: string }> = [];

  /** One account's movements, one after another, each posted again every REPEAT_EVERY. */
  async function postAccount(account: string, from: number, to: number): Promise<void> {
    for (let seq = from; seq <= to; seq++) {
      const movement: Movement = { account, seq, amount: seq % 3 === 1 ? 1000 + seq : -seq };
      const res = await post(producer, movement);
      expect(res.status).toBe(202);
      const { entryId } = (await res.json()) as { entryId: string };
      expected.set(account, (expected.get(account) ?? 0) + movement.amount);
      if (seq % REPEAT_EVERY === 0) {
        const again = (await (await post(producer, movement)).json()) as { entryId: string };
        repeats.push({ first: entryId, again: again.entryId });
      }
      await sleep(5); // a burst, not a flood: the join and the leave land in the middle of it
    }
  }
  /**
   * Movements from..to of every account: two feeds side by side, each posting its accounts' runs
   * one account after the other (a statement's worth at a time), so a read holds runs of one
   * account, which only per-account order keeps from overtaking each other.
   */
  const burst = (from: number, to: number) =>
    Promise.all(
      [ACCOUNTS.slice(0, 4), ACCOUNTS.slice(4)].map(async (feed) => {
        for (const account of feed) await postAccount(account, from, to);
      }),
    );

  it('balances as posted, 0 order violations, every partition owned while they join and leave', async () => {
    const partitionLengths = () =>
      Promise.all(
        Array.from({ length: LEDGER_PARTITIONS }, (_, i) =>
          redis.xlen(partitionStreamOf('ledger', i)),
        ),
      ).then((lengths) => lengths.reduce((n, l) => n + l, 0));
    const lengthBefore = await partitionLengths();
    const a = await startInstance('sample-a');
    producer = a;
    await waitFor(async () => (await summary(a)).ledger.ownedHere.length === LEDGER_PARTITIONS, {
      message: 'sample-a owns the 4 partitions',
    });

    // a third of the burst on sample-a alone, a third while sample-b joins and takes 2 partitions
    await burst(1, 12);
    const joined = burst(13, 24);
    const b = await startInstance('sample-b');
    await joined;
    await waitFor(
      async () => {
        const [ownedA, ownedB] = [
          (await summary(a)).ledger.ownedHere,
          (await summary(b)).ledger.ownedHere,
        ];
        return (
          ownedA.length === 2 &&
          ownedB.length === 2 &&
          [...ownedA, ...ownedB].sort().join() === '0,1,2,3'
        );
      },
      { timeoutMs: 15_000, message: 'sample-a and sample-b own 2 partitions each' },
    );

    // the dashboard's group row of the ledger: each owner with its partitions
    const overview = (await (await fetch(`${a}/echo-stream/api/overview`)).json()) as OverviewView;
    const row = overview.streams.find((s) => s.stream === 'ledger')?.groups[0];
    expect(row).toMatchObject({ group: 'balances', handler: 'BalancesHandler.apply' });
    expect(row!.partitions!.map((p) => p.owner).sort()).toEqual([
      'sample-a',
      'sample-a',
      'sample-b',
      'sample-b',
    ]);
    expect(row!.consumers.map((c) => c.name).sort()).toEqual(['sample-a', 'sample-b']);
    // and `echo-stream inspect ledger`
    const inspected = await runCliProcess(['--url', server.url, 'inspect', 'ledger']);
    expect(inspected.stderr).toBe('');
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toContain('stream ledger: partitioned, 4 partition(s)');
    expect(inspected.stdout).toMatch(/group balances: 2 owner\(s\)/);
    const owners = inspected.stdout.match(/^\s*\d+\s+(sample-[ab])\s/gm) ?? [];
    expect(owners.map((line) => line.trim().split(/\s+/)[1]).sort()).toEqual([
      'sample-a',
      'sample-a',
      'sample-b',
      'sample-b',
    ]);

    // the last third while sample-a leaves (graceful: its partitions go to sample-b)
    const left = burst(25, PER_ACCOUNT);
    await sleep(100);
    producer = b;
    await sleep(100); // the posts in flight to sample-a answer
    await stopInstance('sample-a');
    await left;

    const done = await waitFor(
      async () => {
        const s = await summary(b);
        return s.ledger.applied === ACCOUNTS.length * PER_ACCOUNT ? s : null;
      },
      { timeoutMs: 15_000, message: 'sample-b applied every movement' },
    ).then((s) => s!);
    expect(done.ledger).toMatchObject({ violations: 0, replays: 0, accounts: ACCOUNTS.length });
    expect(done.ledger.ownedHere).toEqual([0, 1, 2, 3]);
    expect(done.ledger.balances).toEqual(
      ACCOUNTS.map((account) => ({
        account,
        seq: PER_ACCOUNT,
        balance: expected.get(account),
        partition: partitionOf(account, LEDGER_PARTITIONS),
      })),
    );

    // each repeat answered its first write's entry id, and nothing was written twice
    expect(repeats).toHaveLength((ACCOUNTS.length * PER_ACCOUNT) / REPEAT_EVERY);
    expect(repeats.filter((r) => r.again !== r.first)).toEqual([]);
    expect((await partitionLengths()) - lengthBefore).toBe(ACCOUNTS.length * PER_ACCOUNT);
  });

  it('refuses a bad movement or statement with 400 and writes nothing', async () => {
    const base = await startInstance('sample-c');
    const streams = Array.from({ length: LEDGER_PARTITIONS }, (_, i) =>
      partitionStreamOf('ledger', i),
    );
    const before = await Promise.all(streams.map((s) => redis.xlen(s)));
    for (const body of [
      { account: 'acct-1', seq: 0, amount: 1 },
      { account: 'acct-1', seq: 1.5, amount: 1 },
      { account: '<b>x</b>', seq: 1, amount: 1 },
      { account: 'acct-1', seq: 1, amount: '5' },
      { account: 'acct-1', seq: 1 },
      [1],
    ]) {
      const res = await post(base, body);
      expect([body, res.status]).toEqual([body, 400]);
    }
    for (const body of [
      { account: 'acct-1', movements: [] },
      {
        account: 'acct-1',
        movements: [
          { seq: 1, amount: 5 },
          { seq: 3, amount: 5 },
        ],
      },
      { account: 'acct-1', movements: [{ seq: 1, amount: 5 }, { seq: 2 }] },
      { account: '', movements: [{ seq: 1, amount: 5 }] },
      {
        account: 'acct-1',
        movements: Array.from({ length: 101 }, (_, i) => ({ seq: i + 1, amount: 1 })),
      },
    ]) {
      const res = await post(base, body, 'statements');
      expect([body.movements.length, res.status]).toEqual([body.movements.length, 400]);
    }
    expect(await Promise.all(streams.map((s) => redis.xlen(s)))).toEqual(before);
  });
});
