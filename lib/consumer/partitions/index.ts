/**
 * Partitions: which partitions this process owns (leases, assignment), the reads and pause watches
 * they share, their lag, and the pending probe that tells a partition loop to sweep.
 */
export * from './partition-assignment';
export * from './partition-lag';
export * from './partition-links';
export * from './partition-ownership';
export * from './partition-sweeps';
