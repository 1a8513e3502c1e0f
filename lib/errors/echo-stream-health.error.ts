import type { EchoStreamHealthResult } from '../interfaces/health-indicator.interface';

/**
 * Thrown by `EchoStreamHealthIndicator.isHealthy()` when a loop is not `running`. Shaped like
 * @nestjs/terminus's `HealthCheckError` (`causes` + `isHealthCheckError`), so terminus reports
 * it as a failed indicator (HTTP 503) rather than an unexpected error.
 */
export class EchoStreamHealthError extends Error {
  /** The indicator result: `{ [key]: { status: 'down', consumers } }`. */
  readonly causes: EchoStreamHealthResult;
  /** The marker terminus looks for. */
  readonly isHealthCheckError = true;

  constructor(message: string, causes: EchoStreamHealthResult) {
    super(message);
    this.name = 'EchoStreamHealthError';
    this.causes = causes;
  }
}
