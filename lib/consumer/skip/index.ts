/**
 * Skips (`dedup`, `newerWins`): the rules, the look-up (one MGET, sent as a read lands), and the
 * filter that sorts a read into entries to handle and entries to acknowledge unhandled.
 */
export * from './skip-filter';
export * from './skip-look-up';
export * from './skip-rules';
export * from './skip.types';
