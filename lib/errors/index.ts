export * from './echo-stream-config.error';
