/**
 * Recovery: the sweep that claims dead peers' idle entries (and dead-letters those past the
 * threshold), and the claims of entries whose retry delay is up.
 */
export * from './pel-sweep';
export * from './retry-claims';
