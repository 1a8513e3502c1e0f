import type { DeadLetterMessage } from './interfaces/dead-letter-message.interface';
import type { StreamHandlerOptions } from './interfaces/stream-handler-options.interface';

/** One discovered `@StreamHandler` method (internal). */
export interface HandlerDefinition {
  stream: string;
  group: string;
  options: Partial<StreamHandlerOptions>;
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
