/** Metadata key of `@StreamHandler` (namespaced so it never meets another package's). */
export const STREAM_HANDLER_METADATA = 'nestjs-echo-stream:stream-handler';
/** Metadata key of `@DeadLetter`. */
export const DEAD_LETTER_METADATA = 'nestjs-echo-stream:dead-letter';
/** Injection token of the resolved module options (internal). */
export const ECHO_STREAM_OPTIONS = Symbol('ECHO_STREAM_OPTIONS');
