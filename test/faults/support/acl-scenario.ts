/**
 * One Nest app exercising every Redis command a consumer app issues (issue 5 scenario 15: the
 * minimal ACL), against a server where the app logs in as an ACL user:
 *
 * - `acl-orders` / `g` (blockMs 5000, minIdleMs 500, claimIntervalMs 100, maxDeliveries 2):
 *   XGROUP CREATE (BUSYGROUP: the test created it), the own-PEL drain, fresh reads and XACK,
 *   a slow entry kept claimed by the heartbeat (XCLAIM JUSTID), a dead peer's entry reclaimed
 *   (XAUTOCLAIM + XPENDING for its delivery count), a poison pill dead-lettered (XPENDING IDLE,
 *   XCLAIM, XADD to `acl-orders:dlq`, @DeadLetter), a poison pill deleted from the stream
 *   (XCLAIM wins nothing, XRANGE finds nothing: acked);
 * - `acl-orders-idle` / `g` (blockMs 5000, no sweep due): a parked read that shutdown wakes with
 *   CLIENT UNBLOCK (CLIENT ID learned first);
 * - the eviction-policy check at start (CONFIG GET), ioredis's ready check (INFO) and connection
 *   name (CLIENT SETNAME) on every connection.
 *
 * Then it reports what worked, what the app logged, what ioredis printed and what the server's
 * ACL LOG denied.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  DeadLetter,
  StreamHandler,
  type DeadLetterMessage,
  type StreamMessage,
} from '../../../lib';
import type { RedisServer } from '../../support/redis-server';
import { sleep, waitFor } from '../../support/wait-for';
import { pendingCount } from './in-process-loop';
import { CaptureLogger, createEchoStreamApp } from './nest-app';

export const ACL_STREAM = 'acl-orders';
export const ACL_IDLE_STREAM = 'acl-orders-idle';

/** What the handlers of the app saw (reset per run). */
const seen = { handled: [] as string[], dead: [] as string[] };

@Injectable()
class AclProbeHandlers {
  @StreamHandler(ACL_STREAM, 'g', {
    blockMs: 5000,
    minIdleMs: 500,
    claimIntervalMs: 100,
    maxDeliveries: 2,
  })
  async handle(message: StreamMessage<{ poison?: boolean; slowMs?: number }>): Promise<void> {
    if (message.payload.poison) throw new Error(`refusing ${message.id}`);
    if (message.payload.slowMs) await sleep(message.payload.slowMs);
    seen.handled.push(message.id);
  }

  @StreamHandler(ACL_IDLE_STREAM, 'g', {
    blockMs: 5000,
    minIdleMs: 60_000,
    claimIntervalMs: 60_000,
  })
  idle(message: StreamMessage<unknown>): void {
    seen.handled.push(message.id);
  }

  @DeadLetter(ACL_STREAM)
  onDead(letter: DeadLetterMessage): void {
    seen.dead.push(letter.id ?? letter.entryId);
  }
}

@Module({ providers: [AclProbeHandlers] })
class AclProbeModule {}

/** The outcome of one run. */
export interface AclRun {
  /** Every stage that completed. */
  stages: string[];
  /** The first stage that did not complete within its time, if any. */
  failedStage?: string;
  /** app.close() duration. */
  closeMs: number;
  /** warn/error lines of the app, minus the expected handler failures of the poison pill. */
  problems: string[];
  /** console.warn calls (ioredis prints there). */
  consoleWarnings: string[];
  /** Denials in the server's ACL LOG for the user: `reason:object`. */
  denied: string[];
  logs: CaptureLogger;
}

const STAGES = ['handled', 'reclaimed', 'dead-lettered', 'nothing pending'] as const;

/**
 * Runs the scenario with the app logged in as `user`/`password`. `admin` is a default-user client
 * of the same server (it prepares the streams and reads the ACL LOG).
 */
export async function runAclScenario(
  server: RedisServer,
  admin: Redis,
  user: string,
  password: string,
  stageTimeoutMs = 4000,
): Promise<AclRun> {
  seen.handled.length = 0;
  seen.dead.length = 0;
  await admin.acl('LOG', 'RESET');
  // a dead peer's entries: one pending after 1 delivery (reclaimed), one delivered twice and then
  // deleted from the stream (a poison pill the sweep's XCLAIM cannot win: XRANGE tells it is gone)
  await admin.xgroup('CREATE', ACL_STREAM, 'g', '0', 'MKSTREAM');
  await admin.xadd(ACL_STREAM, '*', 'id', 'peer-1', 'data', '{}');
  const gone = String(await admin.xadd(ACL_STREAM, '*', 'id', 'gone-1', 'data', '{}'));
  await admin.xreadgroup('GROUP', 'g', 'dead-peer', 'COUNT', 10, 'STREAMS', ACL_STREAM, '>');
  // a second delivery, long idle: the very first sweep's XPENDING IDLE sees the poison pill
  // (XAUTOCLAIM would otherwise report the deleted entry first, idle or not)
  await admin.xclaim(ACL_STREAM, 'g', 'dead-peer', 0, gone, 'IDLE', 600_000);
  await admin.xdel(ACL_STREAM, gone);

  const consoleWarnings: string[] = [];
  const originalWarn = console.warn;
  console.warn = (...args: unknown[]) => void consoleWarnings.push(args.map(String).join(' '));
  const logs = new CaptureLogger();
  const stages: string[] = [];
  let failedStage: string | undefined;
  let closeMs = -1;
  try {
    const app = await createEchoStreamApp(
      {
        connection: `redis://${user}:${encodeURIComponent(password)}@127.0.0.1:${server.port}`,
        consumerName: 'acl-consumer',
        shutdownTimeoutMs: 2000,
      },
      AclProbeModule,
      logs,
    );
    await app.init();
    try {
      const publish = (stream: string, id: string, payload: unknown) =>
        admin.xadd(stream, '*', 'id', id, 'data', JSON.stringify(payload));
      await publish(ACL_STREAM, 'ok-1', {});
      await publish(ACL_STREAM, 'slow-1', { slowMs: 700 });
      await publish(ACL_STREAM, 'bad-1', { poison: true });
      await publish(ACL_IDLE_STREAM, 'idle-1', {});
      const checks: Record<(typeof STAGES)[number], () => Promise<boolean> | boolean> = {
        handled: () => ['ok-1', 'slow-1', 'idle-1'].every((id) => seen.handled.includes(id)),
        reclaimed: () => seen.handled.includes('peer-1'),
        'dead-lettered': async () =>
          seen.dead.includes('bad-1') && (await admin.xlen(`${ACL_STREAM}:dlq`)) === 1,
        'nothing pending': async () =>
          (await pendingCount(admin, ACL_STREAM, 'g')) === 0 &&
          (await pendingCount(admin, ACL_IDLE_STREAM, 'g')) === 0,
      };
      for (const stage of STAGES) {
        try {
          await waitFor(checks[stage], { timeoutMs: stageTimeoutMs, message: stage });
          stages.push(stage);
        } catch {
          failedStage = stage;
          break;
        }
      }
      await sleep(200); // the idle loop parks (blockMs 5000)
    } finally {
      const at = Date.now();
      await app.close();
      closeMs = Date.now() - at;
    }
  } finally {
    console.warn = originalWarn;
  }
  const denied = await aclDenials(admin, user);
  const problems = logs.lines.filter(
    (line) =>
      /^(warn|error) /.test(line) && !/failed on entry .*refusing bad-1|refusing bad-1/.test(line),
  );
  return {
    stages,
    failedStage,
    closeMs,
    problems,
    consoleWarnings,
    denied,
    logs,
  };
}

/**
 * What the server's ACL LOG denied `user`, each once: `reason:object` (`command:xack`,
 * `key:{orders}:echo-paused:g`). A script's denied call is logged too (context `lua`).
 */
export async function aclDenials(admin: Redis, user: string): Promise<string[]> {
  const log = (await admin.acl('LOG')) as unknown[][];
  const denied = log
    .map((flat) => {
      const map = new Map<string, unknown>();
      for (let i = 0; i + 1 < flat.length; i += 2) map.set(String(flat[i]), flat[i + 1]);
      return map;
    })
    .filter((map) => map.get('username') === user)
    .map((map) => `${String(map.get('reason'))}:${String(map.get('object'))}`);
  return [...new Set(denied)];
}

/**
 * The ACL rules a consumer app needs (on the keys of its streams and their dead-letter streams):
 * without any of them a loop degrades (NOPERM) or a dead letter / deleted poison pill fails.
 */
export const REQUIRED_CONSUMER_ACL = [
  // the loop: ensure, drain, read, ack, sweep (XPENDING IDLE + XCLAIM), reclaim, delivery counts,
  // heartbeat and release (XCLAIM JUSTID / IDLE), poison pills deleted meanwhile (XRANGE)
  '+xgroup|create',
  '+xreadgroup',
  '+xack',
  '+xpending',
  '+xautoclaim',
  '+xclaim',
  '+xrange',
  // dead letters: the copy to `<stream>:dlq` (not needed with deadLetterStream: false)
  '+xadd',
  // keys of the package's own in the stream's slot (`{<stream>}...`): the group's pause flag read
  // every claimIntervalMs (MGET), a redelivery's checkpoint (HMGET), dropped with the ack (HDEL)
  '+mget',
  '+hmget',
  '+hdel',
];

/** The required rules before pause and checkpoints: what an app upgraded under an older ACL has. */
export const REQUIRED_CONSUMER_ACL_BEFORE_PAUSE = REQUIRED_CONSUMER_ACL.filter(
  (rule) => !['+mget', '+hmget', '+hdel'].includes(rule),
);

/** Rules whose absence is handled (fallback or silence), but that a consumer app should have. */
export const RECOMMENDED_CONSUMER_ACL = [
  // ioredis's ready check on every connection (without it: a console warning per connection)
  '+info',
  // shutdown wakes a parked read with CLIENT UNBLOCK <CLIENT ID> (without: drops the connection)
  '+client|id',
  '+client|unblock',
  // the eviction-policy warning at start (without: skipped silently)
  '+config|get',
  // connection names in CLIENT LIST (without: ignored by ioredis)
  '+client|setname',
  // XGROUP CREATE answered OOM at maxmemory: is the group there? (without: the OOM stands)
  '+xinfo|groups',
  // the newer server verbs, asked once per connection (without: the Redis 7 path, said at start)
  '+command|docs',
  '+command|info',
  // the owner check of the claims of held entries (without: plain XCLAIM, said once per
  // connection; a process that froze past minIdleMs may then take back a peer's entries)
  '+evalsha',
  '+eval',
];
