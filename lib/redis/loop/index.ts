/**
 * What a consumer loop sends: reads, acks and what rides with them (checkpoints, skip records),
 * pauses, parked reads, pending probes and the rate budget.
 */
export * from './entry-checkpoints';
export * from './group-pauses';
export * from './loop-commands';
export * from './parked-reads';
export * from './pending-probe.script';
export * from './pending-probes';
export * from './rate-budget.script';
export * from './skip-records.script';
