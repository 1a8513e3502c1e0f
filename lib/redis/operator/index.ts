/**
 * What the operator surfaces and lifecycle jobs send: browsing (dashboard, CLI), stream queries,
 * retention, history and consumer cleanup.
 */
export * from './browsing-roles';
export * from './lifecycle-client';
export * from './stream-browser';
export * from './stream-queries';
