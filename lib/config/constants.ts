/** Metadata key of `@StreamHandler` (namespaced so it never meets another package's). */
export const STREAM_HANDLER_METADATA = 'nestjs-echo-stream:stream-handler';
/** Metadata key of `@DeadLetter`. */
export const DEAD_LETTER_METADATA = 'nestjs-echo-stream:dead-letter';
/** Injection token of the resolved module options (internal). */
export const ECHO_STREAM_OPTIONS = Symbol('ECHO_STREAM_OPTIONS');
/**
 * Injection token of the loops' start and stop (the orchestrator), so that the services that only
 * start and stop them (`EchoStreamAdmin`) do not load the engine: the CLI builds them without
 * a Nest app, and starts faster without it (internal).
 */
export const ECHO_STREAM_LOOP_CONTROL = Symbol('ECHO_STREAM_LOOP_CONTROL');
/**
 * Injection token of the lifecycle (retention reports, the codec of a stream's handler), for the
 * same reason: the lifecycle loads discovery and `@nestjs/core` (internal).
 */
export const ECHO_STREAM_LIFECYCLE = Symbol('ECHO_STREAM_LIFECYCLE');
