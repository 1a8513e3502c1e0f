import { Injectable, Optional } from '@nestjs/common';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import { EchoStreamHealthError } from '../errors/echo-stream-health.error';
import type {
  EchoStreamHealthConsumer,
  EchoStreamHealthResult,
} from '../interfaces/health-indicator.interface';

/**
 * A health indicator for @nestjs/terminus (an optional peer; this class does not import it):
 * healthy when every handler loop is `running` or `paused` (an operator paused its group: the
 * process is fine; no loops at all is healthy) and the shared Redis
 * connection (the producer's) is not down. While it is down the details carry `redis` (address,
 * cause) and each loop's `lastError` names the cause too.
 *
 * ```ts
 * @Controller('health')
 * class HealthController {
 *   constructor(private health: HealthCheckService, private echo: EchoStreamHealthIndicator) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.echo.isHealthy()]);
 *   }
 * }
 * ```
 * Without terminus, call `isHealthy()` and treat a rejection with {@link EchoStreamHealthError}
 * as "down" (its `causes` carries the details).
 */
@Injectable()
export class EchoStreamHealthIndicator {
  constructor(
    private readonly registry: ConsumerRegistry,
    @Optional() private readonly connections?: EchoStreamConnections,
  ) {}

  /**
   * Resolves `{ [key]: { status: 'up', consumers } }` (terminus's `HealthIndicatorResult`) when
   * every loop is `running` or `paused`.
   * @param key the name of this indicator in the health report.
   * @throws EchoStreamHealthError (as a rejection) when a loop is neither `running` nor `paused`, or the shared
   *   connection is down; its `causes` is `{ [key]: { status: 'down', consumers, redis? } }`.
   */
  async isHealthy(key = 'echo-stream'): Promise<EchoStreamHealthResult> {
    const consumers: EchoStreamHealthConsumer[] = this.registry.list().map((loop) => {
      const { stream, group, consumer, handler, state, lastError } = loop.snapshot();
      return { stream, group, consumer, handler, state, lastError };
    });
    const down = consumers.filter((c) => c.state !== 'running' && c.state !== 'paused');
    const redis = this.connections?.sharedLinkStatus();
    const redisDown = redis?.state === 'down';
    if (down.length === 0 && !redisDown) return { [key]: { status: 'up', consumers } };
    const causes: EchoStreamHealthResult = {
      [key]: { status: 'down', consumers, ...(redisDown ? { redis } : {}) },
    };
    const which = down
      .map((c) => `${c.stream}/${c.group} ${c.state}${c.lastError ? ` (${c.lastError})` : ''}`)
      .join('; ');
    const lines = redisDown ? [`Redis: ${redis.error}`] : [];
    if (down.length > 0)
      lines.push(`${down.length} of ${consumers.length} echo-stream loop(s) not running: ${which}`);
    throw new EchoStreamHealthError(lines.join('; '), causes);
  }
}
