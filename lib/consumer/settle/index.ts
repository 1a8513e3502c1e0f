/**
 * Settling entries: the ack buffer and its one writer (the XACK and everything that rides with it),
 * the records written with it, dead letters and their path.
 */
export * from './ack-buffer';
export * from './ack-records';
export * from './ack-writer';
export * from './commit-queue';
export * from './dead-letter-path';
export * from './entry-deletion';
export * from './settlement';
