/**
 * A partitioned stream's dead letters, by the stream's own name (docs/partitions.md "Dead
 * letters"), on a real redis-server: a partitioned handler dead-letters entries of several
 * partitions; every letter lands in the one dead-letter stream `<s>:dlq` naming `s`, its
 * partition and key; `@DeadLetter('s')` receives them; `EchoStreamAdmin.deadLetters('s')`, the
 * CLI and the dashboard list and count them (a letter written before this change, naming its
 * partition's stream, included; a partition's name finds that partition's); `redrive('s')` sends
 * each to its key's partition, where the handler (now succeeding) runs it. What a person sees is
 * escaped text (a key with a bidi control).
 */
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  ConsumerStats,
  crc32,
  DeadLetter,
  EchoStreamAdmin,
  EchoStreamDashboardModule,
  NonRetryableError,
  StreamHandler,
  StreamProducer,
  type DeadLetterMessage,
  type StreamMessage,
} from '../../lib';
import { DashboardService } from '../../lib/dashboard/dashboard.service';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';
import { runCliProcess } from '../support/cli-process';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const P = 4;
const GROUP = 'billing';

let server: RedisServer;
let redis: Redis;
let app: INestApplication | undefined;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await app?.close();
  app = undefined;
});
afterAll(async () => {
  redis.disconnect();
  await stopAllRedisServers();
});

interface Call {
  seq: number;
  key: string | undefined;
  partition: number | undefined;
}

/** An app whose partitioned handler throws a NonRetryableError while `state.failing`. */
async function startApp(stream: string, state: { failing: boolean }) {
  const calls: Call[] = [];
  const letters: DeadLetterMessage[] = [];
  @Injectable()
  class Ledger {
    @StreamHandler(stream, GROUP, { partitions: P, partitionLeaseMs: 1000, concurrency: 4 })
    handle(m: StreamMessage<{ seq: number }>): void {
      if (state.failing) throw new NonRetryableError(`card declined for ${m.key}`);
      calls.push({ seq: m.payload.seq, key: m.key, partition: m.partition });
    }

    @DeadLetter(stream)
    onDead(letter: DeadLetterMessage): void {
      letters.push(letter);
    }
  }
  @Module({ imports: [EchoStreamDashboardModule.register()], providers: [Ledger] })
  class LedgerModule {}
  app = await createEchoStreamApp(
    { connection: server.url, consumerName: 'a', shutdownTimeoutMs: 3000 },
    LedgerModule,
    new CaptureLogger(),
  );
  await app.init();
  return { app, calls, letters };
}

const partitionOfKey = (key: string) => crc32(key) % P;
/** Keys over every partition, one of them with a bidi control (hostile text). */
const KEYS = ['acct-0', 'acct-1', 'acct-2', 'acct-3', 'acct-4', 'acct-5', 'evil\u202Ekey'];

it("lists, counts and redrives a partitioned stream's dead letters by its own name", async () => {
  const stream = `pdl-${process.pid}`;
  expect(new Set(KEYS.map(partitionOfKey)).size).toBeGreaterThanOrEqual(3);
  const state = { failing: true };
  const { calls, letters } = await startApp(stream, state);
  const producer = app!.get(StreamProducer);
  for (const [seq, key] of KEYS.entries())
    await producer.publish(stream, { seq }, { key, partitions: P });
  await waitFor(() => letters.length === KEYS.length, {
    timeoutMs: 15_000,
    message: 'every entry dead-lettered',
  });

  // @DeadLetter('s') got each letter with the stream's name, its partition and key
  expect(
    letters
      .map((l) => [l.stream, l.key, l.partition, l.reason])
      .sort((a, b) => (a[1]! > b[1]! ? 1 : -1)),
  ).toEqual([...KEYS].sort().map((key) => [stream, key, partitionOfKey(key), 'non_retryable']));
  // one dead-letter stream, of the stream's name; each letter records s, partition and key
  const dlq = `${stream}:dlq`;
  const raw = await redis.xrange(dlq, '-', '+');
  expect(raw).toHaveLength(KEYS.length);
  for (const [, fields] of raw) {
    const at = (name: string) => fields[fields.indexOf(name) + 1];
    expect(at('dlq_stream')).toBe(stream);
    expect(at('dlq_partition')).toBe(String(partitionOfKey(at('pkey'))));
    expect(at('dlq_key')).toBe(at('pkey'));
  }
  for (let i = 0; i < P; i++) expect(await redis.exists(`${stream}:p:${i}:dlq`)).toBe(0);

  // a letter written before this change: dlq_stream is its partition's name
  const legacyKey = ['acct-10', 'acct-11', 'acct-12', 'acct-13', 'acct-14', 'acct-15'].find(
    (key) => partitionOfKey(key) === 1,
  )!;
  const legacyId = await redis.xadd(
    dlq,
    '*',
    ...['id', 'legacy-1', 'data', JSON.stringify({ seq: 100 }), 'pkey', legacyKey],
    ...['dlq_reason', 'max_deliveries', 'dlq_stream', `${stream}:p:1`, 'dlq_group', GROUP],
    ...[
      'dlq_entry_id',
      '1-0',
      'dlq_attempts',
      '5',
      'dlq_error',
      'old',
      'dlq_at',
      new Date().toISOString(),
    ],
  );
  const total = KEYS.length + 1;

  // the admin lists every letter by the stream's name, each with its partition and key
  const admin = app!.get(EchoStreamAdmin);
  const listed = await admin.deadLetters(stream);
  expect(listed).toHaveLength(total);
  for (const letter of listed) {
    expect(letter).toMatchObject({ stream, group: GROUP, deadLetterStream: dlq });
    expect(letter.partition).toBe(partitionOfKey(letter.key!));
  }
  expect(listed.find((l) => l.entryId === legacyId)).toMatchObject({
    partition: 1,
    key: legacyKey,
    id: 'legacy-1',
  });
  // asked by a partition's name: that partition's letters, found in s:dlq
  const ofOne = await admin.deadLetters(`${stream}:p:1`);
  expect(ofOne.map((l) => l.entryId).sort()).toEqual(
    listed
      .filter((l) => l.partition === 1)
      .map((l) => l.entryId)
      .sort(),
  );
  expect(ofOne.map((l) => l.entryId)).toContain(legacyId);

  // counted: ConsumerStats.inspect, per partition too
  const byPartition = Array.from(
    { length: P },
    (_, i) => listed.filter((l) => l.partition === i).length,
  );
  const inspection = await app!.get(ConsumerStats).inspect(stream, GROUP);
  expect(inspection).toMatchObject({ pending: 0, lag: 0, deadLetters: total });
  expect(inspection.partitions!.map((p) => p.deadLetters)).toEqual(byPartition);
  expect(inspection.partitions!.reduce((n, p) => n + p.length, 0)).toBe(KEYS.length);
  // a partition's stream inspected by its own name counts that partition's letters
  const ofPartition = await app!.get(ConsumerStats).inspect(`${stream}:p:1`, GROUP);
  expect(ofPartition.deadLetters).toBe(byPartition[1]);

  // counted on the dashboard: the stream's row and its group's, and listed there
  const dashboard = app!.get(DashboardService);
  const row = (await dashboard.overview()).streams.find((s) => s.stream === stream)!;
  expect(row).toMatchObject({ deadLetters: total, deadLettersExact: true, length: KEYS.length });
  expect(row.groups).toHaveLength(1);
  expect(row.groups[0]).toMatchObject({ group: GROUP, deadLetters: total, pending: 0 });
  expect(row.groups[0].partitions!.map((p) => p.deadLetters)).toEqual(byPartition);
  const page = await dashboard.deadLetters(stream, { count: 50, after: undefined });
  expect(page.entries).toHaveLength(total);
  expect(page.entries.find((e) => e.entryId === legacyId)).toMatchObject({
    partition: 1,
    key: legacyKey,
  });

  // the CLI: listed and counted by the stream's name; a hostile key printed escaped
  const cli = (...args: string[]) => runCliProcess(['--url', server.url, ...args]);
  const json = await cli('--json', 'dead-letters', stream);
  expect(json.stderr).toBe('');
  expect((JSON.parse(json.stdout) as unknown[]).length).toBe(total);
  const text = await cli('dead-letters', stream);
  expect(text.stdout).toMatch(/ENTRY +GROUP +PARTITION +KEY +REASON/);
  expect(text.stdout).toContain('evil\\u202Ekey');
  expect(text.stdout).not.toContain('\u202E');
  const inspected = await cli('--json', 'inspect', stream);
  expect(JSON.parse(inspected.stdout)).toMatchObject({
    deadLetters: total,
    groups: [{ group: GROUP, deadLetters: total }],
  });
  const onePartition = JSON.parse((await cli('--json', 'inspect', `${stream}:p:1`)).stdout) as {
    groups: Array<{ deadLetters: number }>;
  };
  expect(onePartition.groups.map((g) => g.deadLetters)).toEqual([byPartition[1]]);
  const plan = await cli('--json', 'redrive', stream, '--dry-run');
  expect(JSON.parse(plan.stdout)).toMatchObject({ wouldMove: total, moved: 0 });

  // deleted by the stream's name (not by another stream's): the letter of one key
  const doomed = listed.find((l) => l.key === 'acct-0')!.entryId;
  expect(await admin.deleteDeadLetters(`${stream}-other`, [doomed])).toEqual([]);
  expect(await admin.deleteDeadLetters(stream, [doomed])).toEqual([doomed]);
  expect((await admin.deadLetters(stream)).map((l) => l.entryId)).not.toContain(doomed);

  // redrive by the stream's name: each letter goes to its key's partition and is handled there
  state.failing = false;
  expect(await admin.redrive(stream)).toBe(total - 1);
  expect(await redis.xlen(dlq)).toBe(0);
  await waitFor(() => calls.length === total - 1, {
    timeoutMs: 15_000,
    message: 'redriven handled',
  });
  const expected = [
    ...KEYS.map((key, seq) => ({ seq, key })).filter(({ key }) => key !== 'acct-0'),
    { seq: 100, key: legacyKey },
  ];
  expect(
    calls.map((c) => [c.seq, c.key, c.partition]).sort((a, b) => Number(a[0]) - Number(b[0])),
  ).toEqual(expected.map(({ seq, key }) => [seq, key, partitionOfKey(key)]));
  // nothing left pending in any partition, nothing written to the stream of the name
  await waitFor(async () => (await app!.get(ConsumerStats).inspect(stream, GROUP)).pending === 0, {
    timeoutMs: 10_000,
    message: 'nothing pending',
  });
  expect(await redis.exists(stream)).toBe(0);
});
