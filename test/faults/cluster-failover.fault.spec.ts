/**
 * Cluster failover with replicas (docs/scale.md, issue 15): 3 masters + 3 replicas
 * (`cluster-node-timeout` 1000 ms), one app with handlers on two streams per master, and a producer
 * publishing all the time with `{ replicas: 1 }` that retries a rejected publish under the same
 * id, as a real app would. Twice in a row (a failover, then one more in the same app), a master
 * of another shard each time is SIGKILLed mid-run, its replica is promoted, and the old master is
 * restarted (it rejoins as a replica of the new one).
 *
 * Invariants (the oracle):
 * - no loss: every publish that RESOLVED (the master wrote it and a replica acknowledged it) is
 *   handled or dead-lettered; a rejected publish is not acknowledged and does not count;
 * - nothing stuck: XPENDING of every group is 0 at the end;
 * - loops degrade while their master is gone and run again after the promotion.
 * Reported (console): per kill, how long handling of the killed master's streams stopped (the
 * longest gap between two handled entries of those streams around the kill) and how long the
 * cluster took to promote the replica.
 *
 * `ECHO_FAILOVER_ROUNDS=n` runs n kills instead; `ECHO_SOAK=1` runs 3, one per shard.
 */
import 'reflect-metadata';
import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import {
  brandedId,
  ConsumerStats,
  DeadLetter,
  EchoStreamModule,
  EchoStreamPublishError,
  StreamHandler,
  StreamProducer,
  type DeadLetterMessage,
  type StreamMessage,
} from '../../lib';
import { RedisCluster } from '../support/redis-cluster';
import type { RedisServer } from '../support/redis-server';
import { stopAllRedisServers } from '../support/redis-server';
import { soakOr } from '../support/soak';
import { sleep, waitFor } from '../support/wait-for';

/** Kills: the second already runs after a failover; a third repeats it on the last shard. */
const ROUNDS = Number(process.env.ECHO_FAILOVER_ROUNDS ?? soakOr(2, 3));
const NODE_TIMEOUT_MS = 1000;
const REPLICA_TIMEOUT_MS = 500;

let cluster: RedisCluster;
let redis: Cluster;
let app: INestApplicationContext | undefined;

beforeAll(async () => {
  cluster = await RedisCluster.start({ replicasPerMaster: 1, nodeTimeoutMs: NODE_TIMEOUT_MS });
  redis = cluster.client();
});
afterAll(async () => {
  await app?.close();
  await cluster?.stop();
  await stopAllRedisServers();
});

/** A fresh key whose slot `master` serves. */
async function keyOn(master: RedisServer, prefix: string, taken: Set<string>): Promise<string> {
  for (let i = 0; i < 1000; i++) {
    const key = `${prefix}-${process.pid}-${i}`;
    if (!taken.has(key) && (await cluster.masterFor(key)) === master) {
      taken.add(key);
      return key;
    }
  }
  throw new Error(`no key found on port ${master.port}`);
}

/** The longest pause between two consecutive times of `times` (sorted) within [from, to]. */
function longestGap(times: number[], from: number, to: number): { gap: number; at: number } {
  const inWindow = times.filter((t) => t >= from && t <= to).sort((a, b) => a - b);
  let gap = 0;
  let at = from;
  for (let i = 1; i < inWindow.length; i++) {
    if (inWindow[i] - inWindow[i - 1] > gap) {
      gap = inWindow[i] - inWindow[i - 1];
      at = inWindow[i - 1];
    }
  }
  return { gap, at };
}

/** `EchoStreamReplicationError`, `EchoStreamPublishError(closed, written unknown)`, `ReplyError CLUSTERDOWN`... */
function rejectionKind(err: unknown): string {
  if (err instanceof EchoStreamPublishError) {
    return `${err.name}(${err.reason}, written ${String(err.written)})`;
  }
  if (err instanceof Error) {
    return err.name === 'ReplyError' ? `ReplyError ${err.message.split(' ')[0]}` : err.name;
  }
  return String(err);
}

describe('Redis Cluster failover with replicas', () => {
  it(`${ROUNDS} masters SIGKILLed in a row: replicas promoted, loops resume, nothing published with replicas: 1 is lost, nothing pending`, async () => {
    const masters = cluster.servers.slice(0, 3);
    const taken = new Set<string>();
    const streams: string[] = [];
    for (const master of masters) {
      streams.push(await keyOn(master, 'fo', taken), await keyOn(master, 'fo', taken));
    }

    const handledAt = new Map<string, number[]>(streams.map((s) => [s, []]));
    const handled = new Set<string>();
    const deadLettered = new Set<string>();
    let duplicates = 0;
    const onEntry = (m: StreamMessage<unknown>): void => {
      if (handled.has(m.id)) duplicates++;
      handled.add(m.id);
      handledAt.get(m.stream)!.push(Date.now());
    };
    // minIdleMs short: an entry whose ack the dead master took with it is reclaimed in the run
    const opts = { blockMs: 1000, minIdleMs: 3000 };
    @Injectable()
    class Handlers {
      @StreamHandler(streams[0], 'g', opts)
      @StreamHandler(streams[1], 'g', opts)
      @StreamHandler(streams[2], 'g', opts)
      @StreamHandler(streams[3], 'g', opts)
      @StreamHandler(streams[4], 'g', opts)
      @StreamHandler(streams[5], 'g', opts)
      handle(m: StreamMessage<unknown>): void {
        onEntry(m);
      }
      @DeadLetter(streams[0])
      @DeadLetter(streams[1])
      @DeadLetter(streams[2])
      @DeadLetter(streams[3])
      @DeadLetter(streams[4])
      @DeadLetter(streams[5])
      dead(letter: DeadLetterMessage): void {
        if (letter.id) deadLettered.add(letter.id);
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [
        EchoStreamModule.forRoot({
          cluster: { nodes: cluster.nodes },
          consumerName: 'c1',
          shutdownTimeoutMs: 2000,
        }),
      ],
      providers: [Handlers],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
    const producer = app.get(StreamProducer);
    const stats = app.get(ConsumerStats);
    await waitFor(() => stats.snapshot().every((s) => s.state === 'running'), {
      message: 'six loops running',
    });

    // One publisher per stream: publish, and on any rejection publish again under the same id
    // until it resolves (a rejected publish may or may not be in the stream; the id dedups).
    const acknowledged = new Set<string>();
    const rejections = new Map<string, number>();
    let publishing = true;
    const publishers = streams.map(async (stream) => {
      for (let i = 0; publishing; i++) {
        const id = brandedId();
        for (;;) {
          try {
            await producer.publish(
              stream,
              { stream, i },
              { id, replicas: 1, replicaTimeoutMs: REPLICA_TIMEOUT_MS },
            );
            acknowledged.add(id);
            break;
          } catch (err) {
            const kind = rejectionKind(err);
            rejections.set(kind, (rejections.get(kind) ?? 0) + 1);
            await sleep(50);
          }
        }
        await sleep(10);
      }
    });

    // degraded loops, watched all along
    const degradedSeen = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const s of stats.snapshot()) if (s.state === 'degraded') degradedSeen.add(s.stream);
        await sleep(20);
      }
    })();

    const report: string[] = [];
    try {
      await waitFor(() => streams.every((s) => handledAt.get(s)!.length >= 5), {
        message: 'steady state before the first kill',
      });
      for (let round = 0; round < ROUNDS; round++) {
        // the shard of masters[round % 3]'s first stream, whoever serves it now
        const victim = await cluster.masterFor(streams[(round % 3) * 2]);
        const victimStreams: string[] = [];
        for (const s of streams) if ((await cluster.masterFor(s)) === victim) victimStreams.push(s);
        const slots = await cluster.slotsOf(victim);
        degradedSeen.clear();
        const ackedBefore = acknowledged.size;
        await sleep(500);

        const killedAt = Date.now();
        await victim.kill('SIGKILL');
        const promoted = await cluster.waitFailover(victim, slots, 20_000);
        const promotedAt = Date.now();
        expect(promoted).not.toBe(victim);
        expect(await cluster.roleOf(promoted)).toBe('master');

        // the killed master's streams are handled again, from their new master
        const resumed = await waitFor(
          () => {
            const after = victimStreams.map((s) => handledAt.get(s)!.find((t) => t > promotedAt));
            return after.every((t) => t !== undefined) ? Math.max(...(after as number[])) : 0;
          },
          { timeoutMs: 30_000, message: `handling of ${victimStreams.join(', ')} resumed` },
        );
        // the old master comes back as a replica of the new one: replicas: 1 works for its shard
        await victim.restart();
        await cluster.waitHealthy(20_000);
        await cluster.waitReplicated(20_000);
        expect(await cluster.roleOf(victim)).toBe('replica');
        const ackedAfter = acknowledged.size;
        await waitFor(() => acknowledged.size >= ackedAfter + 12, {
          timeoutMs: 15_000,
          message: 'publishing with replicas: 1 again',
        });
        await waitFor(() => stats.snapshot().every((s) => s.state === 'running'), {
          timeoutMs: 20_000,
          message: 'every loop running again',
        });

        const times = victimStreams.flatMap((s) => handledAt.get(s)!);
        const { gap, at } = longestGap(times, killedAt - 1000, resumed);
        expect(acknowledged.size).toBeGreaterThan(ackedBefore);
        // loops of the killed master's streams were degraded while it was gone
        for (const s of victimStreams) expect(degradedSeen.has(s)).toBe(true);
        report.push(
          `round ${round + 1}: killed port ${victim.port} (streams ${victimStreams.join(', ')}), ` +
            `replica port ${promoted.port} promoted ${promotedAt - killedAt} ms after the kill; ` +
            `handling of those streams stopped ${gap} ms (from ${at - killedAt} ms to ` +
            `${at + gap - killedAt} ms after the kill); both streams handled again ` +
            `${resumed - killedAt} ms after the kill`,
        );
      }
    } finally {
      publishing = false;
      watching = false;
      await Promise.all([...publishers, watcher]);
    }

    // the oracle: every acknowledged publish handled or dead-lettered, nothing pending
    const missing = () =>
      [...acknowledged].filter((id) => !handled.has(id) && !deadLettered.has(id));
    await waitFor(() => missing().length === 0, {
      timeoutMs: 20_000,
      message: 'every acknowledged publish handled or dead-lettered',
    }).catch((err: Error) => {
      throw new Error(`${err.message}; missing ${missing().length} of ${acknowledged.size}`);
    });
    for (const stream of streams) {
      await waitFor(
        async () => Number(((await redis.xpending(stream, 'g')) as unknown[])[0]) === 0,
        { timeoutMs: 20_000, message: `nothing pending on ${stream}` },
      );
    }
    console.log(
      [
        `cluster failover, ${ROUNDS} round(s), cluster-node-timeout ${NODE_TIMEOUT_MS} ms:`,
        ...report,
        `acknowledged publishes: ${acknowledged.size}, handled ids: ${handled.size}, ` +
          `duplicates: ${duplicates}, dead-lettered: ${deadLettered.size}, lost: 0`,
        `rejected attempts (retried): ${JSON.stringify(Object.fromEntries(rejections))}`,
      ].join('\n  '),
    );
  });
});
