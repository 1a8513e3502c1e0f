export * from './consumer-cleanup';
export * from './history-reader';
export * from '../config/lifecycle-options';
export * from './periodic-task';
export * from './retention-floor';
export * from './retention-lease';
export * from './stream-retention';
export * from './merged-range';
