/**
 * StreamProducer, EchoStreamAdmin (dead letters), ConsumerStats and EchoStreamHealthIndicator
 * over an in-memory StreamsClient. Invariants: bad arguments write nothing; redrive copies before
 * it deletes (a failure in between duplicates, never loses) and only touches the letters asked for.
 */
import { EchoStreamAdmin } from '../../lib/admin/echo-stream-admin.service';
import type { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import type { EchoStreamConnections } from '../../lib/runtime/echo-stream.connections';
import type { EchoStreamOrchestrator } from '../../lib/runtime/echo-stream.orchestrator';
import { ConsumerRegistry } from '../../lib/runtime/echo-stream.registry';
import { EchoStreamHealthError } from '../../lib/errors/echo-stream-health.error';
import type {
  ConsumerSnapshot,
  ConsumerState,
} from '../../lib/interfaces/consumer-snapshot.interface';
import { brandedIdTime } from '../../lib/codec/branded-id';
import { StreamProducer } from '../../lib/producer/stream-producer.service';
import { ConsumerStats } from '../../lib/stats/consumer-stats.service';
import { EchoStreamHealthIndicator } from '../../lib/stats/echo-stream-health.indicator';
import type {
  ConsumerInfo,
  GroupInfo,
  PendingRow,
  StreamsClient,
} from '../../lib/redis/streams-client';
import { FakeStreamsClient } from '../support/fake-streams-client';

function connectionsOf(client: FakeStreamsClient): EchoStreamConnections {
  return { client, publishTimeoutMs: 2000 } as unknown as EchoStreamConnections;
}

const REDIS_COMMAND: Partial<Record<keyof StreamsClient, string>> = {
  add: 'XADD',
  range: 'XRANGE',
  remove: 'XDEL',
  length: 'XLEN',
  groups: 'XINFO GROUPS',
  consumers: 'XINFO CONSUMERS',
  pending: 'XPENDING',
};

/** The client's calls as the Redis commands they send (a pipeline: PIPELINE, then its XADDs). */
function commands(client: FakeStreamsClient): string[] {
  return client.calls.flatMap(({ method, args }) =>
    method === 'addMany'
      ? ['PIPELINE', ...(args[0] as unknown[]).map(() => 'XADD')]
      : [REDIS_COMMAND[method] ?? method],
  );
}

/**
 * Canned XINFO GROUPS (by stream), XINFO CONSUMERS and XPENDING (by `stream/group`) replies; a
 * group without consumers listed answers NOGROUP.
 */
function serveInfo(
  client: FakeStreamsClient,
  info: {
    groups: Record<string, GroupInfo[]>;
    consumers: Record<string, ConsumerInfo[]>;
    pending?: Record<string, PendingRow[]>;
  },
): void {
  client.overrides.groups = async (stream) => info.groups[stream] ?? [];
  client.overrides.consumers = async (stream, group) => {
    const list = info.consumers[`${stream}/${group}`];
    if (!list)
      throw new Error(`NOGROUP No such consumer group '${group}' for key name '${stream}'`);
    return list;
  };
  client.overrides.pending = async (stream, group, query) =>
    (info.pending?.[`${stream}/${group}`] ?? []).slice(0, query.count);
}

/** A stand-in loop: what stats, health and admin read of a StreamConsumer. */
function fakeLoop(
  stream: string,
  group: string,
  opts: { state?: ConsumerState; deadLetterStream?: string | false; lastError?: string } = {},
): StreamConsumer {
  const snap: ConsumerSnapshot = {
    stream,
    group,
    consumer: 'host-1',
    handler: `H.${group}`,
    state: opts.state ?? 'running',
    totalRead: 3,
    totalAcked: 2,
    totalDlq: 1,
    totalErrors: 0,
    totalDeleted: 0,
    totalDuplicates: 0,
    totalStale: 0,
    totalFenced: 0,
    retrying: 0,
    totalRetries: 0,
    tpsIn: 0.3,
    tpsOut: 0.2,
    lastError: opts.lastError ?? null,
  };
  return {
    stream,
    group,
    deadLetterStream: opts.deadLetterStream ?? `${stream}:dlq`,
    snapshot: () => snap,
  } as unknown as StreamConsumer;
}

/** What the dead-letter path writes (docs/dead-letters.md). */
function letterFields(
  original: string[],
  meta: {
    stream: string;
    group: string;
    entryId?: string;
    attempts?: number;
    error?: string;
    reason?: string;
  },
): string[] {
  return [
    ...original,
    'dlq_reason',
    meta.reason ?? 'max_deliveries',
    'dlq_stream',
    meta.stream,
    'dlq_group',
    meta.group,
    'dlq_entry_id',
    meta.entryId ?? '1-0',
    'dlq_attempts',
    String(meta.attempts ?? 5),
    'dlq_error',
    meta.error ?? '',
    'dlq_at',
    '2024-01-02T03:04:05.006Z',
  ];
}

describe('StreamProducer', () => {
  it('writes id + data (JSON) and returns the receipt', async () => {
    const client = new FakeStreamsClient();
    const producer = new StreamProducer(connectionsOf(client));
    const receipt = await producer.publish('orders', { n: 1, s: 'x' });
    const [entry] = client.entries('orders');
    expect(entry.entryId).toBe(receipt.entryId);
    expect(entry.fields).toEqual(['id', receipt.id, 'data', '{"n":1,"s":"x"}']);
    expect(Math.abs(brandedIdTime(receipt.id).getTime() - Date.now())).toBeLessThan(5000);
  });

  it('honours codec, id and maxLen', async () => {
    const client = new FakeStreamsClient();
    const producer = new StreamProducer(connectionsOf(client));
    const receipt = await producer.publish(
      'orders',
      { a: '1', b: '2' },
      { codec: 'fields', id: 'my-id', maxLen: 1000 },
    );
    expect(receipt.id).toBe('my-id');
    const adds = client
      .callsOf('add')
      .map(({ args: [stream, fields, maxLen] }) => ({ stream, fields, maxLen }));
    expect(adds).toEqual([
      { stream: 'orders', fields: ['id', 'my-id', 'a', '1', 'b', '2'], maxLen: 1000 },
    ]);
    const custom = {
      encode: (p: number) => ({ v: String(p * 2) }),
      decode: (f: Record<string, string>) => Number(f.v) / 2,
    };
    await producer.publish('orders', 21, { codec: custom });
    expect(client.entries('orders')[1].fields.slice(2)).toEqual(['v', '42']);
  });

  it('rejects bad arguments with a TypeError and writes nothing', async () => {
    const client = new FakeStreamsClient();
    const producer = new StreamProducer(connectionsOf(client));
    const bad: Array<() => Promise<unknown>> = [
      () => producer.publish('', { a: 1 }),
      () => producer.publish(undefined as unknown as string, { a: 1 }),
      () => producer.publish('s', { a: 1 }, { maxLen: 1.5 }),
      () => producer.publish('s', { a: 1 }, { maxLen: -1 }),
      () => producer.publish('s', { a: 1 }, { maxLen: '10' as unknown as number }),
      () => producer.publish('s', { a: 1 }, { id: '' }),
      () => producer.publish('s', { a: 1 }, { codec: 'xml' as unknown as 'json' }),
      () => producer.publish('s', { a: 1 }, { maxlen: 5 } as unknown as { maxLen: number }),
      () => producer.publish('s', undefined),
      () => producer.publishMany('', [1]),
      () => producer.publishMany('s', 'abc' as unknown as string[]),
      () => producer.publishMany('s', [1, 2], { maxLen: Number.NaN }),
      () => producer.publishMany('s', [1, undefined, 3]),
    ];
    for (const call of bad) await expect(call()).rejects.toThrow(TypeError);
    expect(client.calls).toEqual([]);
  });

  it('publishMany pipelines and returns receipts in order, ids increasing', async () => {
    const client = new FakeStreamsClient();
    const producer = new StreamProducer(connectionsOf(client));
    expect(await producer.publishMany('orders', [])).toEqual([]);
    const receipts = await producer.publishMany('orders', [{ i: 0 }, { i: 1 }, { i: 2 }], {
      maxLen: 50,
    });
    expect(commands(client)).toEqual(['PIPELINE', 'XADD', 'XADD', 'XADD']);
    expect(receipts.map((r) => r.entryId)).toEqual(client.entries('orders').map((e) => e.entryId));
    expect(client.entries('orders').map((e) => e.fields[3])).toEqual([
      '{"i":0}',
      '{"i":1}',
      '{"i":2}',
    ]);
    expect(receipts[0].id < receipts[1].id && receipts[1].id < receipts[2].id).toBe(true);
    const single = await producer.publish('orders', { i: 3 });
    expect(receipts[2].id < single.id).toBe(true);
  });
});

describe('EchoStreamAdmin dead letters', () => {
  function setup(loops: StreamConsumer[] = []) {
    const client = new FakeStreamsClient();
    const registry = new ConsumerRegistry();
    for (const loop of loops) registry.add(loop);
    const orchestrator = {
      starts: 0,
      stops: 0,
      start(): void {
        this.starts++;
      },
      async stop(): Promise<void> {
        this.stops++;
      },
    };
    const admin = new EchoStreamAdmin(
      connectionsOf(client),
      registry,
      orchestrator as unknown as EchoStreamOrchestrator,
    );
    return { client, admin, orchestrator };
  }

  it('redrives to the source stream without dlq_* fields, keeping id, then deletes', async () => {
    const { client, admin } = setup();
    await client.add(
      'orders:dlq',
      letterFields(['id', 'b1', 'data', '{"x":1}'], { stream: 'orders', group: 'g1' }),
    );
    await client.add(
      'orders:dlq',
      letterFields(['id', 'b2', 'data', '{"x":2}'], { stream: 'orders', group: 'g2' }),
    );
    expect(await admin.redrive('orders')).toBe(2);
    expect(client.entries('orders').map((e) => e.fields)).toEqual([
      ['id', 'b1', 'data', '{"x":1}'],
      ['id', 'b2', 'data', '{"x":2}'],
    ]);
    expect(client.entries('orders:dlq')).toEqual([]);
    const copy = commands(client).indexOf('XADD');
    const del = commands(client).indexOf('XDEL');
    expect(copy).toBeGreaterThanOrEqual(0);
    expect(del).toBeGreaterThan(copy);
  });

  it('filters by group, skips letters of other streams, stops at count', async () => {
    const { client, admin } = setup();
    for (let i = 0; i < 5; i++) {
      await client.add(
        'orders:dlq',
        letterFields(['id', `a${i}`, 'data', '1'], { stream: 'orders', group: 'g1' }),
      );
      await client.add(
        'orders:dlq',
        letterFields(['id', `b${i}`, 'data', '1'], { stream: 'orders', group: 'g2' }),
      );
    }
    await client.add(
      'orders:dlq',
      letterFields(['id', 'x', 'data', '1'], { stream: 'payments', group: 'g1' }),
    );
    expect(await admin.redrive('orders', { group: 'g1', count: 3 })).toBe(3);
    expect(client.entries('orders').map((e) => e.fields[1])).toEqual(['a0', 'a1', 'a2']);
    expect(await admin.redrive('orders', { group: 'g1' })).toBe(2);
    expect(client.entries('orders').map((e) => e.fields[1])).toEqual([
      'a0',
      'a1',
      'a2',
      'a3',
      'a4',
    ]);
    const left = client.entries('orders:dlq').map((e) => e.fields[1]);
    expect(left).toEqual(['b0', 'b1', 'b2', 'b3', 'b4', 'x']);
    expect(await admin.redrive('orders', { count: 0 })).toBe(0);
    expect(client.entries('payments')).toEqual([]);
  });

  it('pages through long dead-letter streams', async () => {
    const { client, admin } = setup();
    for (let i = 0; i < 250; i++) {
      await client.add(
        'orders:dlq',
        letterFields(['id', `i${i}`, 'data', '1'], {
          stream: 'orders',
          group: i % 2 ? 'odd' : 'even',
        }),
      );
    }
    expect(await admin.redrive('orders', { group: 'odd' })).toBe(125);
    expect(client.entries('orders').map((e) => e.fields[1])).toEqual(
      Array.from({ length: 125 }, (_, k) => `i${2 * k + 1}`),
    );
    expect(client.entries('orders:dlq')).toHaveLength(125);
    expect(await admin.redrive('orders')).toBe(125);
    expect(client.entries('orders:dlq')).toHaveLength(0);
  });

  it('a failure between copy and delete duplicates, never loses', async () => {
    const { client, admin } = setup();
    await client.add(
      'orders:dlq',
      letterFields(['id', 'b1', 'data', '1'], { stream: 'orders', group: 'g' }),
    );
    client.fail('remove', { error: new Error('connection lost') });
    await expect(admin.redrive('orders')).rejects.toThrow('connection lost');
    expect(client.entries('orders')).toHaveLength(1);
    expect(client.entries('orders:dlq')).toHaveLength(1);
    client.fail('addMany', { error: new Error('connection lost') });
    await expect(admin.redrive('orders')).rejects.toThrow('connection lost');
    expect(client.entries('orders:dlq')).toHaveLength(1);
  });

  it("uses the loops' dead-letter stream when this app runs one", async () => {
    const { client, admin } = setup([fakeLoop('orders', 'g1', { deadLetterStream: 'graveyard' })]);
    await client.add(
      'graveyard',
      letterFields(['id', 'b1', 'data', '1'], { stream: 'orders', group: 'g1' }),
    );
    await client.add(
      'orders:dlq',
      letterFields(['id', 'b2', 'data', '1'], { stream: 'orders', group: 'g1' }),
    );
    expect((await admin.deadLetters('orders')).map((l) => l.id)).toEqual(['b1']);
    expect(await admin.redrive('orders', { group: 'g1' })).toBe(1);
    expect(client.entries('graveyard')).toEqual([]);
    expect(client.entries('orders:dlq')).toHaveLength(1);
  });

  it('lists dead letters, parsed, oldest first', async () => {
    const { client, admin } = setup();
    const entryId = await client.add(
      'orders:dlq',
      letterFields(['id', 'b1', 'data', '{oops'], {
        stream: 'orders',
        group: 'g1',
        entryId: '1700000000000-3',
        attempts: 1,
        error: 'bad json',
        reason: 'decode_error',
      }),
    );
    await client.add(
      'orders:dlq',
      letterFields(['id', 'b2', 'data', '1'], { stream: 'orders', group: 'g2' }),
    );
    const letters = await admin.deadLetters('orders');
    expect(letters).toHaveLength(2);
    expect(letters[0]).toEqual({
      deadLetterStream: 'orders:dlq',
      entryId,
      reason: 'decode_error',
      stream: 'orders',
      group: 'g1',
      sourceEntryId: '1700000000000-3',
      attempts: 1,
      error: 'bad json',
      at: new Date('2024-01-02T03:04:05.006Z'),
      id: 'b1',
      fields: { id: 'b1', data: '{oops' },
    });
    expect(letters[1].error).toBeUndefined();
    expect((await admin.deadLetters('orders', { group: 'g2' })).map((l) => l.id)).toEqual(['b2']);
    expect(await admin.deadLetters('orders', { count: 1 })).toHaveLength(1);
    expect(await admin.deadLetters('nothing')).toEqual([]);
    expect(client.entries('orders:dlq')).toHaveLength(2);
  });

  it('rejects bad arguments', async () => {
    const { client, admin } = setup();
    await expect(admin.redrive('')).rejects.toThrow(TypeError);
    await expect(admin.redrive('s', { count: 1.5 })).rejects.toThrow(TypeError);
    await expect(admin.redrive('s', { group: '' })).rejects.toThrow(TypeError);
    await expect(admin.deadLetters('s', { count: -1 })).rejects.toThrow(TypeError);
    expect(client.calls).toEqual([]);
  });

  it('start and stop delegate to the orchestrator', async () => {
    const { admin, orchestrator } = setup();
    admin.start();
    await admin.stop();
    expect(orchestrator.starts).toBe(1);
    expect(orchestrator.stops).toBe(1);
  });
});

describe('ConsumerStats', () => {
  it('reads snapshots from the registry', () => {
    const registry = new ConsumerRegistry();
    const stats = new ConsumerStats(registry, connectionsOf(new FakeStreamsClient()));
    expect(stats.snapshot()).toEqual([]);
    registry.add(fakeLoop('orders', 'g1'));
    registry.add(fakeLoop('orders', 'g2', { state: 'degraded' }));
    expect(stats.snapshot().map((s) => s.group)).toEqual(['g1', 'g2']);
    expect(stats.get('orders', 'g2')?.state).toBe('degraded');
    expect(stats.get('orders', 'g3')).toBeUndefined();
    const text = stats.prometheus();
    expect(text).toContain(
      'echo_stream_up{stream="orders",group="g2",consumer="host-1",handler="H.g2"} 0',
    );
  });

  it('inspects a group: pending, lag, consumers, oldest pending age, dead letters', async () => {
    const client = new FakeStreamsClient();
    const registry = new ConsumerRegistry();
    registry.add(fakeLoop('orders', 'g1', { deadLetterStream: 'graveyard' }));
    const stats = new ConsumerStats(registry, connectionsOf(client));
    const addedAt = Date.now() - 60_000;
    serveInfo(client, {
      groups: {
        orders: [
          { name: 'g0', pending: 9, lag: 9, lastDeliveredId: '0-0' },
          { name: 'g1', pending: 2, lag: 7, lastDeliveredId: '1-0' },
        ],
      },
      consumers: { 'orders/g1': [{ name: 'c1', pending: 2, idleMs: 1500 }] },
      pending: {
        'orders/g1': [
          { entryId: `${addedAt}-0`, consumer: 'c1', idleMs: 10, deliveries: 3 },
          { entryId: `${addedAt + 1}-0`, consumer: 'c1', idleMs: 10, deliveries: 1 },
        ],
      },
    });
    await client.add('graveyard', ['id', 'x']);
    await client.add('graveyard', ['id', 'y']);
    const inspection = await stats.inspect('orders', 'g1');
    expect(inspection).toMatchObject({
      pending: 2,
      lag: 7,
      consumers: [{ name: 'c1', pending: 2, idleMs: 1500 }],
      deadLetters: 2,
    });
    expect(inspection.oldestPendingMs).toBeGreaterThanOrEqual(60_000);
    expect(inspection.oldestPendingMs).toBeLessThan(70_000);
  });

  it('inspects a group this app does not run, and a missing one', async () => {
    const client = new FakeStreamsClient();
    const stats = new ConsumerStats(new ConsumerRegistry(), connectionsOf(client));
    serveInfo(client, {
      groups: { orders: [{ name: 'g0', pending: 0, lag: null, lastDeliveredId: '0-0' }] },
      consumers: { 'orders/g0': [] },
    });
    await client.add('orders:dlq', ['id', 'x']);
    expect(await stats.inspect('orders', 'g0')).toEqual({
      pending: 0,
      lag: null,
      consumers: [],
      oldestPendingMs: null,
      deadLetters: 1,
    });
    expect(await stats.inspect('orders', 'nope')).toEqual({
      pending: 0,
      lag: null,
      consumers: [],
      oldestPendingMs: null,
      deadLetters: 1,
    });
  });

  it('counts no dead letters for a loop with deadLetterStream: false', async () => {
    const client = new FakeStreamsClient();
    const registry = new ConsumerRegistry();
    registry.add(fakeLoop('orders', 'g1', { deadLetterStream: false }));
    await client.add('orders:dlq', ['id', 'x']);
    const stats = new ConsumerStats(registry, connectionsOf(client));
    expect((await stats.inspect('orders', 'g1')).deadLetters).toBe(0);
  });
});

describe('EchoStreamHealthIndicator', () => {
  it('is up with no loops and with every loop running', async () => {
    const registry = new ConsumerRegistry();
    const indicator = new EchoStreamHealthIndicator(registry);
    expect(await indicator.isHealthy()).toEqual({ 'echo-stream': { status: 'up', consumers: [] } });
    registry.add(fakeLoop('orders', 'g1'));
    const result = await indicator.isHealthy('streams');
    expect(result.streams.status).toBe('up');
    expect(result.streams.consumers).toEqual([
      {
        stream: 'orders',
        group: 'g1',
        consumer: 'host-1',
        handler: 'H.g1',
        state: 'running',
        lastError: null,
      },
    ]);
  });

  it('throws a terminus-shaped error when a loop is not running', async () => {
    const registry = new ConsumerRegistry();
    registry.add(fakeLoop('orders', 'g1'));
    registry.add(fakeLoop('orders', 'g2', { state: 'degraded', lastError: 'ECONNREFUSED' }));
    const indicator = new EchoStreamHealthIndicator(registry);
    const err = await indicator.isHealthy().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EchoStreamHealthError);
    const health = err as EchoStreamHealthError;
    expect(health.isHealthCheckError).toBe(true);
    expect(health.message).toContain('orders/g2 degraded (ECONNREFUSED)');
    expect(health.causes['echo-stream'].status).toBe('down');
    expect(health.causes['echo-stream'].consumers.map((c) => c.state)).toEqual([
      'running',
      'degraded',
    ]);
  });

  it("fits @nestjs/terminus's HealthIndicatorFunction (type-level)", () => {
    // A copy of terminus's types (it is an optional peer, not installed here).
    type HealthIndicatorStatus = 'up' | 'down';
    type HealthIndicatorResult = {
      [key: string]: { status: HealthIndicatorStatus; [optionalKeys: string]: unknown };
    };
    type HealthIndicatorFunction = () => PromiseLike<HealthIndicatorResult> | HealthIndicatorResult;
    const indicator = new EchoStreamHealthIndicator(new ConsumerRegistry());
    const fn: HealthIndicatorFunction = () => indicator.isHealthy();
    expect(typeof fn).toBe('function');
  });
});
