import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as OtelApi from '@opentelemetry/api';

/** The `@opentelemetry/api` module (internal; its types never reach the package's public API). */
export type Otel = typeof OtelApi;

/** Name of the tracer the package's spans come from. */
export const TRACER_NAME = 'nestjs-echo-stream';

/**
 * True while no tracer provider is registered (the API alone, no SDK): spans would be no-ops, so
 * the package skips them and costs nothing. Checked per call, so an SDK registered after the app
 * started is picked up.
 */
export function tracingOff(otel: Otel): boolean {
  const provider = otel.trace.getTracerProvider();
  return provider instanceof otel.ProxyTracerProvider && provider.getDelegate() === noopOf(otel);
}

const noops = new WeakMap<Otel, unknown>();

/** The API copy's no-op tracer provider (what an unset proxy delegates to). */
function noopOf(otel: Otel): unknown {
  let noop = noops.get(otel);
  if (noop === undefined) {
    noop = new otel.ProxyTracerProvider().getDelegate();
    noops.set(otel, noop);
  }
  return noop;
}

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
