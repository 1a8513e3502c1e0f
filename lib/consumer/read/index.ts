/**
 * Reading: the blocking read (own or shared), the read ahead while a batch runs, the pause switch,
 * and the triage of a read's entries before they are handed to the handler.
 */
export * from './blocking-read';
export * from './entry-triage';
export * from './parked-read';
export * from './pause-gate';
export * from './pause-watch';
export * from './read-ahead';
export * from './read-claim';
export * from './shared-read';
export * from './shared-read-pool';
export * from './unblock';
