import type { ApplicationConfig } from '@nestjs/core';
import { PARAM_ARGS_METADATA } from './stream-params';

// NOTE: the metadata keys of @UseGuards / @UseInterceptors / @UseFilters (the same in Nest 11 and 12).
const GUARDS_METADATA = '__guards__';
const INTERCEPTORS_METADATA = '__interceptors__';
const EXCEPTION_FILTERS_METADATA = '__exceptionFilters__';

/** Which parts of Nest's pipeline apply to one handler method (internal). */
export interface HandlerEnhancers {
  guards: boolean;
  interceptors: boolean;
  filters: boolean;
  /** The method has parameter decorators (`@Payload`, `@Ctx`, custom ones): pipes run on them. */
  params: boolean;
}

/** Global enhancers as Nest registered them (`APP_*` providers and `app.useGlobal*()`). */
export interface GlobalEnhancers {
  guards: number;
  interceptors: number;
  filters: number;
}

/**
 * Reads which enhancers apply to `instance[methodName]`: its own and its class's metadata plus the
 * global ones. `globals` undefined (not readable) counts as "there may be some": the handler then
 * takes the full pipeline, which is always correct, only slower.
 */
export function enhancersOf(
  instance: object,
  methodName: string,
  globals: GlobalEnhancers | undefined,
): HandlerEnhancers {
  const method = (instance as Record<string, unknown>)[methodName] as object;
  const host = instance.constructor;
  const has = (key: string, global: number | undefined) =>
    (global ?? 1) > 0 ||
    listed(Reflect.getMetadata(key, method)) ||
    listed(Reflect.getMetadata(key, host));
  const params = Reflect.getMetadata(PARAM_ARGS_METADATA, host, methodName) as object | undefined;
  return {
    guards: has(GUARDS_METADATA, globals?.guards),
    interceptors: has(INTERCEPTORS_METADATA, globals?.interceptors),
    filters: has(EXCEPTION_FILTERS_METADATA, globals?.filters),
    params: params !== undefined && Object.keys(params).length > 0,
  };
}

/** True when a handler needs nothing of the pipeline: the engine calls the method inline. */
export function isPlain(enhancers: HandlerEnhancers): boolean {
  return !enhancers.guards && !enhancers.interceptors && !enhancers.filters && !enhancers.params;
}

/** Static global enhancers, counted. */
export function countGlobals(config: ApplicationConfig): GlobalEnhancers {
  return {
    guards: config.getGlobalGuards().length,
    interceptors: config.getGlobalInterceptors().length,
    filters: config.getGlobalFilters().length,
  };
}

/**
 * Names of the request-scoped (or transient) global enhancers: Nest builds them per HTTP request,
 * and a stream entry is no request, so they never run for a stream handler.
 */
export function requestScopedGlobals(config: ApplicationConfig): string[] {
  const named = (kind: string, wrappers: ReadonlyArray<{ name?: unknown; metatype?: unknown }>) =>
    wrappers.map((w) => `${kind} ${nameOfWrapper(w)}`);
  return [
    ...named('APP_GUARD', config.getGlobalRequestGuards()),
    ...named('APP_INTERCEPTOR', config.getGlobalRequestInterceptors()),
    ...named('APP_PIPE', config.getGlobalRequestPipes()),
    ...named('APP_FILTER', config.getGlobalRequestFilters()),
  ];
}

function nameOfWrapper(wrapper: { name?: unknown; metatype?: unknown }): string {
  const metatype = wrapper.metatype as { name?: unknown } | null | undefined;
  if (typeof metatype === 'function' && typeof metatype.name === 'string' && metatype.name)
    return metatype.name;
  return String(wrapper.name);
}

function listed(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}
