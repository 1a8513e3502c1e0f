// The engine's public face for the layers above (runtime, lifecycle, tracing, tests): they import
// from here, never from a capability's folder (docs/ARCHITECTURE.md "The engine by capability").
export * from './context/backoff';
export * from './context/consumer-counters';
export * from './context/consumer-config';
export * from './context/loop-context';
export * from './context/rate-tracker';
export * from './settle/dead-letter-path';
export * from './handle/handler-runner';
export * from './retry/retry-policy';
export * from './retry/retry-scheduler';
export * from './read/pause-watch';
export * from './read/read-claim';
export * from './read/shared-read-pool';
export * from './partitions/partition-links';
export * from './loop/loop-config';
export * from './loop/stream-consumer';
export * from './loop/partitioned-consumer';
