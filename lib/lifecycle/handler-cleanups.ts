import { Logger } from '@nestjs/common';
import { LIFECYCLE_DEFAULTS } from '../config/lifecycle-options';
import type { HandlerDefinition } from '../config/handler-definitions';
import type { LifecycleClient } from '../redis/operator';
import { ConsumerCleanup } from './consumer-cleanup';
import { PeriodicTask } from './periodic-task';

/** Consumer cleanup runs every `idleMs / 2`, at most every hour (ms). */
const MAX_CLEANUP_INTERVAL_MS = 3_600_000;
/** Each process tells each of its groups it is alive every `idleMs / 3`, at most this long (ms). */
const MAX_TOUCH_INTERVAL_MS = 30_000;

/** What the cleanup of one handler needs of it. */
export type CleanedHandler = Pick<HandlerDefinition, 'stream' | 'group' | 'resolved'>;

/**
 * The consumer cleanup of a set of handlers on timers (docs/operations.md "Consumer cleanup"):
 * per handler, its consumer is touched every `idleMs / 3` and the group's idle consumers are
 * deleted every `idleMs / 2`. The module runs one over the app's `@StreamHandler` methods, the
 * microservices transport one over its patterns (internal).
 */
export class HandlerCleanups {
  private tasks: PeriodicTask[] = [];

  /**
   * @param handlers the handlers whose groups are cleaned (`consumerCleanup: false`: touched only).
   * @param self this process's consumer name (never deleted).
   */
  constructor(
    private readonly handlers: readonly CleanedHandler[],
    private readonly self: string,
  ) {}

  /** Starts the timers, the first runs spread over one interval. */
  start(client: LifecycleClient): void {
    for (const handler of this.handlers) {
      const setting = handler.resolved.consumerCleanup;
      const idleMs = setting === false ? null : setting.idleMs;
      const cleanup = new ConsumerCleanup({
        client,
        stream: handler.stream,
        group: handler.group,
        partitions: handler.resolved.partitions,
        self: this.self,
        idleMs,
        logger: new Logger(`${handler.stream}/${handler.group}`),
      });
      const touchIdleMs = idleMs ?? LIFECYCLE_DEFAULTS.consumerCleanupIdleMs;
      const tasks = [
        new PeriodicTask(Math.min(MAX_TOUCH_INTERVAL_MS, Math.floor(touchIdleMs / 3)), () =>
          cleanup.touch(),
        ),
      ];
      if (idleMs !== null) {
        const intervalMs = Math.min(MAX_CLEANUP_INTERVAL_MS, Math.floor(idleMs / 2));
        tasks.push(new PeriodicTask(intervalMs, async () => void (await cleanup.run())));
      }
      // first runs spread over one interval: 100 handlers must not touch Redis in one burst
      for (const task of tasks) task.start(Math.ceil(Math.random() * task.intervalMs));
      this.tasks.push(...tasks);
    }
  }

  /** Whether there is anything to run (no handler: no client needed). */
  get empty(): boolean {
    return this.handlers.length === 0;
  }

  /** Stops the timers; settles when a run in progress has ended. */
  async stop(): Promise<void> {
    const tasks = this.tasks;
    this.tasks = [];
    await Promise.all(tasks.map((task) => task.stop()));
  }
}
