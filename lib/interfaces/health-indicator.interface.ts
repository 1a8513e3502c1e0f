import type { ConsumerState } from './consumer-snapshot.interface';
import type { RedisLinkStatus } from './redis-server.interface';

// NOTE: type aliases, not interfaces: only object literal types are assignable to
// @nestjs/terminus's `HealthIndicatorResult` (an index signature), interfaces are not.

/** One loop as `EchoStreamHealthIndicator` reports it. */
export type EchoStreamHealthConsumer = {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  /** `'Class.method'`. */
  readonly handler: string;
  readonly state: ConsumerState;
  readonly lastError: string | null;
};

/** The details under the indicator's key: `'up'` when every loop is `running`. */
export type EchoStreamHealthDetails = {
  status: 'up' | 'down';
  consumers: EchoStreamHealthConsumer[];
  /** The shared Redis connection, present while it is down (with the cause). */
  redis?: RedisLinkStatus;
};

/** `{ [key]: details }`: the shape of @nestjs/terminus's `HealthIndicatorResult`. */
export type EchoStreamHealthResult = Record<string, EchoStreamHealthDetails>;
