export * from './backoff';
export * from './consumer-counters';
export * from './consumer.types';
export * from './dead-letter-path';
export * from './handler-runner';
export * from './rate-tracker';
export * from './stream-consumer';
