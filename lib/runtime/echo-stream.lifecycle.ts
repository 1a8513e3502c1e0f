import { randomUUID } from 'node:crypto';
import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleInit,
} from '@nestjs/common';
import { resolveCodec } from '../codec/codecs';
import { StreamArchiveExplorer } from '../discovery/echo-stream-archive.explorer';
import { checkDeleteOnAckPlan } from './delete-on-ack-checks';
import { EchoStreamConnections } from './echo-stream.connections';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import { EchoStreamExplorer } from '../discovery/echo-stream.explorer';
import type { ResolvedModuleOptions } from '../config/module-options';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { StreamCodec } from '../interfaces/codec.interface';
import type { RetentionReport } from '../interfaces/lifecycle.interface';
import { ConsumerCleanup, type ConsumerCleanupContext } from '../lifecycle/consumer-cleanup';
import { PeriodicTask } from '../lifecycle/periodic-task';
import { RetentionLease } from '../lifecycle/retention-lease';
import { StreamRetention } from '../lifecycle/stream-retention';
import { LIFECYCLE_DEFAULTS } from '../config/lifecycle-options';
import type { LifecycleClient } from '../redis/operator';
import { retentionLockKey } from '../redis/package-keys';

/** The retention lock lives at least this long (ms), so a busy event loop does not lose it. */
const MIN_LOCK_TTL_MS = 5000;
/** Consumer cleanup runs every `idleMs / 2`, at most every hour (ms). */
const MAX_CLEANUP_INTERVAL_MS = 3_600_000;
/** Each process tells each of its groups it is alive every `idleMs / 3`, at most this long (ms). */
const MAX_TOUCH_INTERVAL_MS = 30_000;

/** One handler's consumer cleanup, before the client exists. */
interface CleanupPlan {
  /** How often its consumer is touched (marked alive). */
  touchIntervalMs: number;
  /** How often idle consumers are deleted (`null`: cleanup off). */
  cleanupIntervalMs: number | null;
  plan: Omit<ConsumerCleanupContext, 'client'>;
}

/**
 * Runs the stream lifecycle (docs/operations.md) on timers from bootstrap to shutdown: retention
 * (with the archive methods) per rule, consumer cleanup per handler (internal). Also answers which
 * codec decodes a stream's history.
 */
@Injectable()
export class EchoStreamLifecycle
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly retentions = new Map<string, StreamRetention>();
  private tasks: PeriodicTask[] = [];
  private cleanups: CleanupPlan[] = [];

  constructor(
    private readonly explorer: EchoStreamExplorer,
    private readonly archives: StreamArchiveExplorer,
    private readonly connections: EchoStreamConnections,
    @Inject(ECHO_STREAM_OPTIONS) private readonly options: ResolvedModuleOptions,
  ) {}

  /**
   * Checks the archive methods against the rules, `deleteOnAck` against the archive methods and
   * the other groups of the app, and the cleanup options (a mismatch fails before
   * any loop starts: the explorers ran their own `onModuleInit` first, being registered earlier).
   */
  onModuleInit(): void {
    const rules = new Set(this.options.retention.map((rule) => rule.stream));
    for (const [stream, archive] of this.archives.byStream) {
      if (!rules.has(stream)) {
        throw new EchoStreamConfigError(
          `@StreamArchive('${stream}') on ${archive.name}: stream '${stream}' has no retention rule, ` +
            `so nothing would ever be archived; add { stream: '${stream}', maxLen or maxAgeMs } to the ` +
            `module option 'retention' (rules: ${[...rules].join(', ') || 'none'})`,
        );
      }
    }
    checkDeleteOnAckPlan(
      this.explorer.handlers.map((definition) => ({ definition, options: definition.resolved })),
      (stream) => this.archives.byStream.get(stream),
    );
    this.cleanups = this.planCleanups();
  }

  /** Starts the retention and cleanup timers (also with `autoStart: false`). */
  onApplicationBootstrap(): void {
    if (this.options.retention.length === 0 && this.cleanups.length === 0) return;
    const client = this.connections.client.lifecycle();
    this.startRetention(client);
    for (const { plan, touchIntervalMs, cleanupIntervalMs } of this.cleanups) {
      const cleanup = new ConsumerCleanup({ ...plan, client });
      const tasks = [new PeriodicTask(touchIntervalMs, () => cleanup.touch())];
      if (cleanupIntervalMs !== null) {
        tasks.push(new PeriodicTask(cleanupIntervalMs, async () => void (await cleanup.run())));
      }
      // first runs spread over one interval: 100 handlers must not touch Redis in one burst
      for (const task of tasks) task.start(Math.ceil(Math.random() * task.intervalMs));
      this.tasks.push(...tasks);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    const tasks = this.tasks;
    this.tasks = [];
    // a run in progress (an archive call) gets shutdownTimeoutMs; past that its lock is released
    // below and it stops before trimming anything more (its renewal fails)
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(tasks.map((task) => task.stop())),
      new Promise((resolve) => (timer = setTimeout(resolve, this.options.shutdownTimeoutMs))),
    ]);
    clearTimeout(timer);
    await Promise.all([...this.retentions.values()].map((retention) => retention.release()));
  }

  /**
   * The retention figures of `stream` as of its last run.
   * @throws TypeError when no retention rule names `stream`.
   */
  report(stream: string): RetentionReport {
    const retention = this.retentions.get(stream);
    if (retention) return retention.report();
    const rule = this.options.retention.find((r) => r.stream === stream);
    if (rule) {
      return {
        stream,
        trimmedTotal: 0,
        heldBackBy: null,
        oldestEntryId: null,
        length: 0,
        lastRunAt: null,
      };
    }
    const known = this.options.retention.map((r) => `'${r.stream}'`).join(', ') || 'none';
    throw new TypeError(
      `ConsumerStats.retention(): no retention rule for stream ${JSON.stringify(stream)} (rules: ${known})`,
    );
  }

  /** The figures of every stream with a retention rule. */
  reports(): RetentionReport[] {
    return this.options.retention.map((rule) => this.report(rule.stream));
  }

  /** The codec of this app's handler of `stream`, else the module default codec. */
  codecFor(stream: string): StreamCodec<unknown> {
    const handler = this.explorer.handlers.find((h) => h.stream === stream);
    if (!handler) return resolveCodec(this.options.defaults.codec ?? 'json');
    return handler.resolved.codec;
  }

  private startRetention(client: LifecycleClient): void {
    const intervalMs = this.options.retentionIntervalMs;
    const token = `${this.options.consumerName}:${randomUUID()}`;
    for (const rule of this.options.retention) {
      const lease = new RetentionLease(
        client,
        retentionLockKey(rule.stream),
        token,
        Math.max(intervalMs, MIN_LOCK_TTL_MS),
      );
      const retention = new StreamRetention({
        rule,
        client,
        lease,
        archive: this.archives.byStream.get(rule.stream),
        logger: new Logger(`retention ${rule.stream}`),
      });
      this.retentions.set(rule.stream, retention);
      const task = new PeriodicTask(intervalMs, () => retention.run());
      // the first run within one interval, spread so that processes started together do not align
      task.start(Math.floor(intervalMs * (0.5 + Math.random() / 2)));
      this.tasks.push(task);
    }
  }

  private planCleanups(): CleanupPlan[] {
    return this.explorer.handlers.map((handler) => {
      const setting = handler.resolved.consumerCleanup;
      const idleMs = setting === false ? null : setting.idleMs;
      const touchIdleMs = idleMs ?? LIFECYCLE_DEFAULTS.consumerCleanupIdleMs;
      return {
        touchIntervalMs: Math.min(MAX_TOUCH_INTERVAL_MS, Math.floor(touchIdleMs / 3)),
        cleanupIntervalMs:
          idleMs === null ? null : Math.min(MAX_CLEANUP_INTERVAL_MS, Math.floor(idleMs / 2)),
        plan: {
          stream: handler.stream,
          group: handler.group,
          partitions: handler.resolved.partitions,
          self: this.options.consumerName,
          idleMs,
          logger: new Logger(`${handler.stream}/${handler.group}`),
        },
      };
    });
  }
}
