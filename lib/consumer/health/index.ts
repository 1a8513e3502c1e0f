/**
 * A loop's vital signs: the heartbeat that keeps entries in hand from looking idle, the Redis-error
 * streak and its backoff, and the pace of the sweep for dead peers' work.
 */
export * from './heartbeat';
export * from './loop-health';
export * from './sweep-pace';
