/**
 * What a consumer loop sends: reads, acks and what rides with them (checkpoints, skip records),
 * pauses, parked reads, pending probes, the rate budget, and the commits of exactly-once entries.
 */
export * from './entry-checkpoints';
export * from './group-pauses';
export * from './loop-commands';
export * from './parked-reads';
export * from './pel-scripts';
export * from './pending-probes';
export * from './rate-budget.script';
export * from './skip-records.script';
export * from './entry-commit.script';
export * from './entry-commits';
export * from './entry-deletions';
export type * from './commit-roles';
export type * from './ack-roles';
