import type { PipeTransform, Type } from '@nestjs/common';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import { PARAM_ARGS_METADATA, type StreamParamtype } from '../handlers/stream-params';

/** A pipe as `@Payload()` takes it: an instance or a class Nest instantiates. */
export type StreamPipe = PipeTransform | Type<PipeTransform>;

/**
 * Records one `@StreamHandler` parameter in Nest's parameter metadata (shared by `@Payload` and
 * `@Ctx`; internal). Pipes are checked here, at decoration time, so a typo fails at import.
 */
export function streamParam(
  decorator: string,
  type: StreamParamtype,
  data: string | undefined,
  pipes: readonly unknown[],
): ParameterDecorator {
  pipes.forEach((pipe, i) => checkPipe(decorator, pipe, i));
  return (target, key, index) => {
    if (key === undefined) {
      throw new EchoStreamConfigError(
        `@${decorator}() is a method parameter decorator; it was put on a constructor parameter of ${nameOf(target)}`,
      );
    }
    const host = target.constructor;
    const existing = (Reflect.getMetadata(PARAM_ARGS_METADATA, host, key) ?? {}) as Record<
      string,
      unknown
    >;
    Reflect.defineMetadata(
      PARAM_ARGS_METADATA,
      { ...existing, [`${type}:${index}`]: { index, data, pipes: [...pipes] } },
      host,
      key,
    );
  };
}

function checkPipe(decorator: string, pipe: unknown, at: number): void {
  const ok =
    typeof pipe === 'function' ||
    (typeof pipe === 'object' &&
      pipe !== null &&
      typeof (pipe as Partial<PipeTransform>).transform === 'function');
  if (!ok) {
    throw new EchoStreamConfigError(
      `@${decorator}(): argument ${at + 1} must be a pipe (an object with transform() or a pipe class), got ${
        pipe === null ? 'null' : typeof pipe
      }`,
    );
  }
}

function nameOf(target: object): string {
  return typeof target === 'function' ? target.name : target.constructor.name;
}
