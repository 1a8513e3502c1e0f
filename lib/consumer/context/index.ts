/**
 * The engine's floor: what a loop gets from outside (the handler, the dead-letter sink, the logger,
 * tracing), the context every collaborator is built from, its counters and the wait after a Redis
 * error. Imports no other capability.
 */
export * from './backoff';
export * from './consumer-config';
export * from './consumer-counters';
export * from './log-text';
export * from './loop-context';
export * from './owned-partition';
export * from './rate-tracker';
