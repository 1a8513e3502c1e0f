/**
 * Retries: the policy (delays, attempts), the one decision (retry now, later, or dead-letter), and
 * the schedulers that hold a failed entry until its delay is up (per entry, or per key in a lane).
 */
export * from './key-retry';
export * from './retry-decision';
export * from './retry-policy';
export * from './retry-scheduler';
