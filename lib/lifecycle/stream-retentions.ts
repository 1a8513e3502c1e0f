import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { ResolvedRetentionRule } from '../config/lifecycle-options';
import type { RetentionReport } from '../interfaces/lifecycle.interface';
import type { LifecycleClient } from '../redis/operator';
import { retentionLockKey } from '../redis/package-keys';
import { PeriodicTask } from './periodic-task';
import { RetentionLease } from './retention-lease';
import { StreamRetention, type ArchiveMethod } from './stream-retention';

/** The retention lock lives at least this long (ms), so a busy event loop does not lose it. */
const MIN_LOCK_TTL_MS = 5000;

/** What the retention of a set of rules needs. */
export interface StreamRetentionsOptions {
  rules: readonly ResolvedRetentionRule[];
  /** The pause between two runs of a rule (ms). */
  intervalMs: number;
  /** This process's consumer name: the start of its lock token. */
  consumerName: string;
  /** The `@StreamArchive` method of a stream (the transport has none). */
  archiveOf: (stream: string) => ArchiveMethod | undefined;
}

/**
 * The retention rules on timers (docs/operations.md "Retention"): per rule, one run every
 * `intervalMs` under the stream's lock, so one process of a fleet trims it at a time; the figures
 * of each as of its last run. The module runs one over its option `retention`, the microservices
 * transport one over its own (internal).
 */
export class StreamRetentions {
  private readonly retentions = new Map<string, StreamRetention>();
  private tasks: PeriodicTask[] = [];

  constructor(private readonly options: StreamRetentionsOptions) {}

  /** Whether there is no rule (no client needed). */
  get empty(): boolean {
    return this.options.rules.length === 0;
  }

  /** Starts one timer per rule, its first run within one interval, spread across processes. */
  start(client: LifecycleClient): void {
    const { rules, intervalMs, consumerName, archiveOf } = this.options;
    const token = `${consumerName}:${randomUUID()}`;
    for (const rule of rules) {
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
        archive: archiveOf(rule.stream),
        logger: new Logger(`retention ${rule.stream}`),
      });
      this.retentions.set(rule.stream, retention);
      const task = new PeriodicTask(intervalMs, () => retention.run());
      // so that processes started together do not align
      task.start(Math.floor(intervalMs * (0.5 + Math.random() / 2)));
      this.tasks.push(task);
    }
  }

  /** Stops the timers; settles when a run in progress (an archive call) has ended. */
  async stop(): Promise<void> {
    const tasks = this.tasks;
    this.tasks = [];
    await Promise.all(tasks.map((task) => task.stop()));
  }

  /** Releases every lock held (a run cut short by a stop's deadline then trims nothing more). */
  async release(): Promise<void> {
    await Promise.all([...this.retentions.values()].map((retention) => retention.release()));
  }

  /**
   * The figures of `stream` as of its last run.
   * @throws TypeError when no rule names `stream`.
   */
  report(stream: string): RetentionReport {
    const retention = this.retentions.get(stream);
    if (retention) return retention.report();
    const { rules } = this.options;
    if (rules.some((r) => r.stream === stream)) {
      return {
        stream,
        trimmedTotal: 0,
        heldBackBy: null,
        oldestEntryId: null,
        length: 0,
        lastRunAt: null,
      };
    }
    const known = rules.map((r) => `'${r.stream}'`).join(', ') || 'none';
    throw new TypeError(
      `ConsumerStats.retention(): no retention rule for stream ${JSON.stringify(stream)} (rules: ${known})`,
    );
  }

  /** The figures of every rule. */
  reports(): RetentionReport[] {
    return this.options.rules.map((rule) => this.report(rule.stream));
  }
}
