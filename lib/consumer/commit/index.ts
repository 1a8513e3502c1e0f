/**
 * Exactly-once commits: an entry's writes (`m.tx`), collected and checked as the handler makes
 * them, for the loop to commit with the entry's XACK; `m.tx` of every message; the outbox of
 * publishes to other Cluster slots and its forwarder.
 */
export * from './outbox-forwarder';
export * from './stream-transaction';
export * from './transactions';
