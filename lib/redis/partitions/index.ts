/**
 * Partition leases: their roles, the client and its script (one call per group and tick).
 */
export * from './partition-leases';
export * from './partition-leases.script';
export * from './partition-roles';
