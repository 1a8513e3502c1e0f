/**
 * Writes: plain and idempotent adds (the script, the server's IDMP, their roles) and the
 * replicated write.
 */
export * from './idempotent-add.script';
export * from './idempotent-roles';
export * from './idmp-add.script';
export * from './idmp-setup.script';
export * from './idmp-streams';
export * from './idmp-writes';
export * from './replicated-write';
export * from './stream-writes';
export * from './outbox-roles';
export * from './transaction-outbox';
