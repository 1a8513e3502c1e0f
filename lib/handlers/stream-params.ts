import type { ParamData } from '@nestjs/common';
import type { ParamsFactory } from '@nestjs/core';

/**
 * Where parameter decorators record themselves. NOTE: the key Nest's own route and custom
 * (`createParamDecorator`) parameter decorators use, so a custom decorator works on a stream
 * handler too (its factory gets the `'echo-stream'` execution context); Nest 11 and 12 agree on it.
 */
export const PARAM_ARGS_METADATA = '__routeArguments__';

/**
 * The kinds of `@StreamHandler` parameter (internal). Numbers, as Nest's metadata keys are
 * `<type>:<index>` and it hands `Number(type)` to the params factory. NOTE: the payload shares the
 * number of Nest's `RouteParamtypes.BODY` (as `@nestjs/microservices` does) because Nest tells
 * pipes `metadata.type` from that number: `'body'` for it, `'custom'` for anything else, and
 * `ValidationPipe` skips `'custom'` parameters. The message is `'custom'` (never validated).
 */
export enum StreamParamtype {
  PAYLOAD = 3,
  CONTEXT = 41,
}

/**
 * Turns a parameter kind into its value from the handler call's arguments `(payload, context)`:
 * the decoded payload (or one property of it) and the `StreamMessage` (in batch mode, the array of
 * payloads and the array of messages).
 */
export const streamParamsFactory: ParamsFactory = {
  exchangeKeyForValue(type: number, data: ParamData, args: unknown[]): unknown {
    switch (type as StreamParamtype) {
      case StreamParamtype.PAYLOAD: {
        const payload = args[0];
        if (data === undefined || data === null) return payload;
        return typeof payload === 'object' && payload !== null
          ? (payload as Record<string, unknown>)[String(data)]
          : undefined;
      }
      case StreamParamtype.CONTEXT:
        return args[1];
      default:
        return undefined;
    }
  },
};
