import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as OtelApi from '@opentelemetry/api';

/** The `@opentelemetry/api` module (internal; its types never reach the package's public API). */
export type Otel = typeof OtelApi;

/** Name of the tracer the package's spans come from. */
export const TRACER_NAME = 'nestjs-echo-stream';

/**
 * Loads `@opentelemetry/api`, an optional peer, when the app has it installed; `undefined`
 * otherwise (tracing is then off and costs nothing). Resolved from the package itself (CommonJS
 * `require`), or from the working directory where `require` does not exist (an ES module build
 * of the package, e.g. under a test runner). The API keeps its registrations on a process global,
 * so any copy sees the SDK the app registered.
 */
export function loadOtel(): Otel | undefined {
  try {
    const load = typeof require === 'function' ? require : createRequire(join(process.cwd(), '_'));
    const api = load('@opentelemetry/api') as Partial<Otel>;
    return typeof api.trace?.getTracer === 'function' && api.propagation && api.context
      ? (api as Otel)
      : undefined;
  } catch {
    return undefined;
  }
}
