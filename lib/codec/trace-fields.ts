/**
 * The W3C Trace Context fields a traced publish adds to an entry (docs/observability.md "Tracing").
 * They are part of the wire format like `id`: never part of a payload (no codec sees them), kept on
 * dead-letter copies.
 */
export const TRACE_FIELDS: readonly string[] = ['traceparent', 'tracestate'];

/** True for a field name the trace context owns. */
export function isTraceField(name: string): boolean {
  return name === 'traceparent' || name === 'tracestate';
}

/** The trace fields of a flat entry field list, or `undefined` when it has none (the usual case). */
export function traceCarrierOf(flat: readonly string[]): Record<string, string> | undefined {
  let carrier: Record<string, string> | undefined;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if (isTraceField(flat[i])) (carrier ??= {})[flat[i]] = flat[i + 1];
  }
  return carrier;
}
