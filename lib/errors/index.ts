export * from './echo-stream-config.error';
export * from './echo-stream-health.error';
export * from './echo-stream-connection.error';
export * from './echo-stream-publish.error';
export * from './echo-stream-replication.error';
export * from './non-retryable.error';
