import type { INestApplicationContext } from '@nestjs/common';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import { messages } from '../config/messages';
import { resolveOptions, type ResolvedModuleOptions } from '../config/module-options';
import type { EchoStreamModuleOptions } from '../interfaces/module-options.interface';

/** Options of `EchoStreamServer`: the module's options plus the group. */
export interface EchoStreamServerOptions extends EchoStreamModuleOptions {
  /**
   * The consumer group of this microservice on every pattern's stream; an
   * `@EventPattern(pattern, { group })` names its own. Instances of one microservice share a group
   * (each event handled once); two microservices with different groups each get every event.
   */
  group: string;
  /**
   * The stream of a pattern.
   * @default the pattern itself
   */
  streamOf?: (pattern: string) => string;
  /**
   * In a hybrid app (`app.connectMicroservice({ strategy })`), the app that imports
   * `EchoStreamModule`: the transport's loops then join the module's `ConsumerStats`, health
   * indicator, dashboard and admin API beside its `@StreamHandler` loops. Without it the transport
   * runs alone (its loops are in none of those).
   * @default undefined
   */
  app?: Pick<INestApplicationContext, 'get'>;
}

/** Options of `EchoStreamClient`: the module's options plus the request settings. */
export interface EchoStreamClientOptions extends EchoStreamModuleOptions {
  /**
   * How long (ms) `send()` waits for its reply; past it the call errors with
   * `EchoStreamRpcTimeoutError`, and a later reply is dropped.
   * @default 30000
   */
  timeoutMs?: number;
  /**
   * The expiry (ms) of the client's reply stream, renewed while the client lives: the stream of a
   * client that went away is gone this long after its last reply.
   * @default 60000
   */
  replyTtlMs?: number;
  /**
   * The stream of a pattern (as the server's `streamOf`).
   * @default the pattern itself
   */
  streamOf?: (pattern: string) => string;
}

/** The server's options resolved: the module's, the group, the stream of a pattern (internal). */
export interface ResolvedServerOptions {
  module: ResolvedModuleOptions;
  group: string;
  streamOf: (pattern: string) => string;
  app: Pick<INestApplicationContext, 'get'> | undefined;
}

/** The client's options resolved (internal). */
export interface ResolvedClientOptions {
  module: ResolvedModuleOptions;
  timeoutMs: number;
  replyTtlMs: number;
  streamOf: (pattern: string) => string;
}

const CLIENT_DEFAULTS = { timeoutMs: 30_000, replyTtlMs: 60_000 } as const;

/** Checks and resolves the server's options; a bad one throws `EchoStreamConfigError`. */
export function resolveServerOptions(options: EchoStreamServerOptions): ResolvedServerOptions {
  const where = 'EchoStreamServer';
  const { group, streamOf, app, ...rest } = options ?? ({} as EchoStreamServerOptions);
  if (typeof group !== 'string' || group.length === 0)
    throw new EchoStreamConfigError(
      messages.badOption(where, 'group', 'a non-empty string', group),
    );
  return {
    // the server starts its loops in listen(), whatever autoStart says
    module: { ...resolveOptions(rest), autoStart: true },
    group,
    streamOf: checkStreamOf(where, streamOf),
    app,
  };
}

/** Checks and resolves the client's options; a bad one throws `EchoStreamConfigError`. */
export function resolveClientOptions(options: EchoStreamClientOptions = {}): ResolvedClientOptions {
  const where = 'EchoStreamClient';
  const { timeoutMs, replyTtlMs, streamOf, ...rest } = options;
  const resolved = {
    timeoutMs: timeoutMs ?? CLIENT_DEFAULTS.timeoutMs,
    replyTtlMs: replyTtlMs ?? CLIENT_DEFAULTS.replyTtlMs,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isInteger(value) || value < 1)
      throw new EchoStreamConfigError(messages.badOption(where, name, 'an integer >= 1', value));
  }
  return { module: resolveOptions(rest), ...resolved, streamOf: checkStreamOf(where, streamOf) };
}

function checkStreamOf(
  where: string,
  streamOf: ((pattern: string) => string) | undefined,
): (pattern: string) => string {
  if (streamOf === undefined) return (pattern) => pattern;
  if (typeof streamOf !== 'function')
    throw new EchoStreamConfigError(messages.badOption(where, 'streamOf', 'a function', streamOf));
  return (pattern) => {
    const stream = streamOf(pattern);
    if (typeof stream !== 'string' || stream.length === 0)
      throw new EchoStreamConfigError(
        messages.badOption(where, `streamOf('${pattern}')`, 'a non-empty string', stream),
      );
    return stream;
  };
}
