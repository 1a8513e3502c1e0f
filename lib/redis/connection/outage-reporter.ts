import type { RedisFailureReason } from '../../interfaces/redis-server.interface';
import type { ConnectionMonitor, LinkEvent } from './connection-monitor';

/** Where the reporter writes; Nest's `Logger` fits. */
export interface OutageLogger {
  log(message: string): void;
  warn(message: string): void;
}

/**
 * Turns the connection events of every connection of the app into few lines: one when Redis
 * becomes unreachable (and one more if the cause changes), one when every connection is back.
 * The loops log their own retries with stream and group; this is the line that says why.
 */
export class OutageReporter {
  private readonly down = new Set<ConnectionMonitor>();
  private reported: { reason: RedisFailureReason; since: number } | null = null;

  constructor(
    private readonly logger: OutageLogger,
    private readonly publishTimeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reports the outages of `link` until it ends. */
  watch(link: ConnectionMonitor): void {
    link.onChange((event) => this.onChange(link, event));
  }

  private onChange(link: ConnectionMonitor, event: LinkEvent): void {
    if (event === 'down') {
      this.down.add(link);
      const failure = link.lastFailure;
      if (failure === null || this.reported?.reason === failure.reason) return;
      this.reported = { reason: failure.reason, since: this.reported?.since ?? this.now() };
      const line = link.describe();
      this.logger.warn(
        `${line[0].toUpperCase()}${line.slice(1)}. Until Redis answers, consumer loops back off ` +
          `and retry, and publish() rejects after ${this.publishTimeoutMs} ms`,
      );
      return;
    }
    this.down.delete(link);
    if (event !== 'up' || this.down.size > 0 || this.reported === null) return;
    const seconds = ((this.now() - this.reported.since) / 1000).toFixed(1);
    this.logger.log(`Redis at ${link.address} answers again (unreachable for ${seconds} s)`);
    this.reported = null;
  }
}
