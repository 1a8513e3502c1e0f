/**
 * Per-key order (partitions, `newerWins`): the lanes that run a key's entries one at a time, the gate
 * that starts a key's next entry only once its predecessor's ack is in, and the held keys whose
 * retry waits with the rest of the key behind it.
 */
export * from './ack-turn';
export * from './held-keys';
export * from './key-ack-gate';
export * from './key-lane-runner';
export * from './key-lanes';
export * from './lane-waves';
