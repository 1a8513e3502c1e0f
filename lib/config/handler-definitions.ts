import type { DeadLetterMessage } from '../interfaces/dead-letter-message.interface';
import type { StreamCodec } from '../interfaces/codec.interface';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface';

/** Handler options with every default applied and the codec resolved. */
export type ResolvedHandlerOptions = Omit<StreamHandlerOptions, 'codec'> & {
  codec: StreamCodec<unknown>;
};

/** One discovered `@StreamHandler` method (internal). */
export interface HandlerDefinition {
  stream: string;
  group: string;
  options: Partial<StreamHandlerOptions>;
  /** `options` over the module's defaults, checked, the codec resolved: done once, at discovery. */
  resolved: ResolvedHandlerOptions;
  /** `'Class.method'`. */
  name: string;
  /** The method, bound to its instance. */
  method: (arg: never) => unknown;
  /** The provider or controller instance that holds it (for Nest's pipeline). */
  instance: object;
  /** The method's name on `instance`. */
  methodName: string;
}

/** One discovered `@DeadLetter` method (internal). */
export interface DeadLetterDefinition {
  stream: string | undefined;
  group: string | undefined;
  name: string;
  method: (letter: DeadLetterMessage) => unknown;
}

/**
 * Where the orchestrator's handlers come from: the explorer's discovered methods, or the
 * microservices transport's patterns (internal).
 */
export interface HandlerSource {
  readonly handlers: readonly HandlerDefinition[];
  readonly deadLetters: readonly DeadLetterDefinition[];
}

/**
 * Builds the call the engine makes for one handler: the Nest pipeline of a discovered method
 * (`HandlerPipelineFactory`), or the microservices transport's call of Nest's own handler (internal).
 */
export interface HandlerCalls {
  build(definition: HandlerDefinition, batch: boolean): (arg: never) => unknown;
}
