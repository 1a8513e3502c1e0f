export * from './echo-stream-config.error';
export * from './echo-stream-health.error';
export * from './non-retryable.error';
