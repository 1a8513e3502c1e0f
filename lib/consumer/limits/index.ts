/**
 * How many entries may run at once and begin per window: `concurrency` slots and `rateLimit` starts
 * (per loop, per group, or pooled across a handler's partition loops).
 */
export * from './handler-limits';
export * from './pooled-limiter';
export * from './rate-limiter';
export * from './start-slots';
