/**
 * Handing a read to the handler: the delivery of a read, the runner with its strategies (per entry,
 * per key, batch), checkpoints, delivery counts and the handler errors kept for dead letters.
 */
export * from './batch-run';
export * from './checkpoints';
export * from './delivery';
export * from './delivery-counts';
export * from './handler-errors';
export * from './handler-runner';
export * from './keyed-run';
export * from './per-entry-run';
