/**
 * Writes: plain and idempotent adds (the script and its roles) and the replicated write.
 */
export * from './idempotent-add.script';
export * from './idempotent-roles';
export * from './replicated-write';
export * from './stream-writes';
export * from './outbox-roles';
export * from './transaction-outbox';
