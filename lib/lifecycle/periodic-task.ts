/**
 * Runs `task` every `intervalMs` (after each run ends, so runs never overlap) until `stop()`
 * (internal). `task` must not throw: it logs its own failures.
 */
export class PeriodicTask {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> | null = null;
  private stopped = false;

  constructor(
    /** The pause between the end of one run and the start of the next. */
    readonly intervalMs: number,
    private readonly task: () => Promise<void>,
  ) {}

  /** Schedules the first run `firstDelayMs` from now. */
  start(firstDelayMs = this.intervalMs): void {
    if (this.stopped || this.timer || this.current) return;
    this.schedule(firstDelayMs);
  }

  /** No further run; resolves once the run in progress (if any) has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.current;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.current = this.task()
        .catch(() => undefined)
        .finally(() => {
          this.current = null;
          if (!this.stopped) this.schedule(this.intervalMs);
        });
    }, delayMs);
    this.timer.unref();
  }
}
