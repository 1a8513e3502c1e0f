import { Injectable, Logger } from '@nestjs/common';
import { ExternalContextCreator, ModuleRef, type ApplicationConfig } from '@nestjs/core';
import type { HandlerDefinition } from '../config/handler-definitions';
import { messages } from '../config/messages';
import { EntryRejectedError } from '../errors/entry-rejected.error';
import type { StreamMessage } from '../interfaces/stream-message.interface';
import {
  countGlobals,
  enhancersOf,
  isPlain,
  requestScopedGlobals,
  type GlobalEnhancers,
  type HandlerEnhancers,
} from './handler-enhancers';
import { rejectionText } from './rejection-text';
import { PARAM_ARGS_METADATA, streamParamsFactory } from './stream-params';

/** `ExecutionContext.getType()` and `ArgumentsHost.getType()` inside a stream handler's pipeline. */
export const ECHO_STREAM_CONTEXT_TYPE = 'echo-stream';

/** A metadata key no method carries: a layer built with it hands its arguments on untouched. */
const NO_PARAMS = 'nestjs-echo-stream:no-params';

/** How far one call got; a throw is judged by it. */
const enum Stage {
  Guards,
  Interceptors,
}

interface CallState {
  stage: Stage;
  /** A pipe threw: the entry is rejected, whatever interceptors and filters make of it. */
  pipeRejection?: { error: unknown };
}

type Layer = (payload: unknown, context: object) => Promise<unknown>;
type AnyMethod = (...args: unknown[]) => unknown;

/**
 * Builds the call the consumer engine makes for one handler (internal). A handler with enhancers
 * or parameter decorators runs through Nest's own external context machinery, the way
 * `@nestjs/microservices` handlers do: guards, interceptors, pipes, the method, exception filters,
 * with the context type `'echo-stream'`, `switchToRpc().getData()` the payload and `.getContext()`
 * the `StreamMessage`. A handler with none keeps the plain bound method (the inline fast path).
 *
 * The pipeline is built as nested layers (guards + filters, then interceptors, then pipes) so a
 * throw can be told apart: one from a guard or a pipe is a deterministic refusal and becomes an
 * `EntryRejectedError` (dead-lettered at once); one from the method or an interceptor is an
 * ordinary failure (left pending, redelivered).
 */
@Injectable()
export class HandlerPipelineFactory {
  private readonly logger = new Logger(HandlerPipelineFactory.name);
  private globals: GlobalEnhancers | undefined | null = null;
  /** Per-call state, keyed by the call's context argument (the message, or the batch's array). */
  private readonly states = new WeakMap<object, CallState>();

  constructor(
    private readonly contextCreator: ExternalContextCreator,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** The per-entry (or per-batch) call for `definition`. */
  build(definition: HandlerDefinition, batch: boolean): (arg: never) => unknown {
    const enhancers = enhancersOf(
      definition.instance,
      definition.methodName,
      this.globalEnhancers(),
    );
    if (isPlain(enhancers)) return definition.method;
    const top = this.layers(definition, enhancers);
    const firstStage = enhancers.guards ? Stage.Guards : Stage.Interceptors;
    const states = this.states;
    const run = async (payload: unknown, context: object): Promise<unknown> => {
      const state: CallState = { stage: firstStage };
      states.set(context, state);
      try {
        return await top(payload, context);
      } catch (err) {
        throw verdict(err, state);
      } finally {
        states.delete(context);
      }
    };
    return batch
      ? async (list: StreamMessage<unknown>[]) =>
          batchAnswer(
            await run(
              list.map((m) => m.payload),
              list,
            ),
            list,
          )
      : (message: StreamMessage<unknown>) => run(message.payload, message);
  }

  private layers(definition: HandlerDefinition, enhancers: HandlerEnhancers): Layer {
    const { instance, methodName } = definition;
    const method = (instance as Record<string, AnyMethod>)[methodName];
    const states = this.states;
    const create = (
      impl: AnyMethod,
      metadataKey: string,
      options: { guards: boolean; interceptors: boolean; filters: boolean },
    ): Layer =>
      this.contextCreator.create(
        instance,
        asHandler(method, methodName, impl),
        methodName,
        metadataKey,
        streamParamsFactory,
        undefined,
        undefined,
        options,
        ECHO_STREAM_CONTEXT_TYPE,
      ) as Layer;

    // innermost: pipes on the decorated parameters, then the method (no decorator: the message)
    const resolve = enhancers.params
      ? create((...resolved: unknown[]) => resolved, PARAM_ARGS_METADATA, NONE)
      : undefined;
    let layer: Layer = async (payload, context) => {
      let args: unknown[] = [context];
      if (resolve) {
        try {
          args = (await resolve(payload, context)) as unknown[];
        } catch (err) {
          const state = states.get(context);
          if (state) state.pipeRejection = { error: err };
          throw err;
        }
      }
      return method.apply(instance, args);
    };
    if (enhancers.interceptors) {
      const inner = layer;
      layer = create((payload, context) => inner(payload, context as object), NO_PARAMS, {
        ...NONE,
        interceptors: true,
      });
    }
    if (enhancers.guards || enhancers.filters) {
      const inner = layer;
      layer = create(
        (payload, context) => {
          const state = states.get(context as object);
          if (state) state.stage = Stage.Interceptors;
          return inner(payload, context as object);
        },
        NO_PARAMS,
        { guards: enhancers.guards, interceptors: false, filters: enhancers.filters },
      );
    }
    return layer;
  }

  /** Global enhancers, read once (after Nest registered them, i.e. from bootstrap on). */
  private globalEnhancers(): GlobalEnhancers | undefined {
    if (this.globals !== null) return this.globals;
    const config = applicationConfigOf(this.moduleRef);
    this.globals = config ? countGlobals(config) : undefined;
    if (config) {
      for (const name of requestScopedGlobals(config))
        this.logger.warn(messages.requestScopedGlobalEnhancer(name));
    }
    return this.globals;
  }
}

const NONE = { guards: false, interceptors: false, filters: false };

/**
 * What a batch call answers: the list of entries to ack (the method's or an interceptor's), or,
 * for any other value (an exception filter that handled the error returns one), the whole batch.
 */
function batchAnswer(result: unknown, list: StreamMessage<unknown>[]): unknown {
  return result === null || result === undefined || Array.isArray(result) ? result : list;
}

/** Turns what reached the top of the pipeline into the engine's verdict. */
function verdict(err: unknown, state: CallState): unknown {
  if (state.pipeRejection)
    return new EntryRejectedError(rejectionText(state.pipeRejection.error), 'pipe', {
      cause: err,
    });
  if (state.stage === Stage.Guards)
    return new EntryRejectedError(rejectionText(err), 'guard', { cause: err });
  return err;
}

/**
 * A function Nest can treat as the handler: metadata reads (`Reflector`, `@UseGuards`...) fall
 * through to the user's method, its prototype; calling it runs `impl`. The user's method and
 * instance are left untouched.
 */
function asHandler(method: AnyMethod, name: string, impl: AnyMethod): AnyMethod {
  const handler = function (this: unknown, ...args: unknown[]): unknown {
    return impl(...args);
  };
  Object.setPrototypeOf(handler, method);
  Object.defineProperty(handler, 'name', { value: name });
  return handler;
}

/**
 * NOTE: Nest keeps global enhancers (APP_* providers, `app.useGlobal*()`) in its
 * `ApplicationConfig`, which it does not offer for injection; `ModuleRef` holds the container that
 * owns it (Nest 11 and 12). Unreadable: undefined, and every handler takes the full pipeline.
 */
function applicationConfigOf(moduleRef: ModuleRef): ApplicationConfig | undefined {
  const container = (moduleRef as unknown as { container?: { applicationConfig?: unknown } })
    .container;
  const config = container?.applicationConfig as Partial<ApplicationConfig> | undefined;
  return typeof config?.getGlobalGuards === 'function' &&
    typeof config.getGlobalRequestGuards === 'function'
    ? (config as ApplicationConfig)
    : undefined;
}
