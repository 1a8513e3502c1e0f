import type { Logger } from '@nestjs/common';
import { isObservable, lastValueFrom } from 'rxjs';
import type { DeadLetterDefinition, HandlerDefinition } from '../config/handler-definitions';
import { resolveHandlerOptions } from '../config/module-options';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { DeadLetterMessage } from '../interfaces/dead-letter-message.interface';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface';
import type { StreamMessage } from '../interfaces/stream-message.interface';
import { EchoStreamContext } from './echo-stream.context';
import type { PatternRoute } from './pattern-routes';
import type { ReplyWriter } from './reply-writer';
import { envelopeCodec, replyAddressOf, RequestEnvelope } from './rpc-wire';
import { answerText, rpcVerdict } from './rpc-verdict';

/**
 * The engine's call for the entries of one route: the payload and an `EchoStreamContext` to each
 * of Nest's handlers of the pattern, then, for a request, the reply (internal).
 *
 * A handler that throws, rejects or whose Observable errors leaves the entry pending for its retry
 * (the engine's retry policy, dead letters after `maxDeliveries`); a `NonRetryableError`
 * dead-letters it at once. A request whose handler answered an `RpcException` gets it as an error
 * reply and is acknowledged; a request past its caller's deadline is acknowledged unrun. An
 * `@EventPattern` loop handles a request entry as an event (no reply): on a stream that a
 * `@MessagePattern` of another group also reads, that one answers.
 */
export class PatternCall {
  constructor(
    private readonly route: PatternRoute,
    private readonly replies: ReplyWriter,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  readonly call = async (message: StreamMessage<unknown>): Promise<void> => {
    const envelope = message.payload instanceof RequestEnvelope ? message.payload : undefined;
    const request = this.route.request ? envelope?.reply : undefined;
    if (request && this.now() > request.deadline) {
      this.logger.warn(
        `${this.route.name}: request ${message.entryId} (correlation ${request.correlationId}) ` +
          `is past its caller's deadline: acknowledged without running`,
      );
      return;
    }
    // the entry as the handler should see it: an event's message as it is (its payload is the
    // user's); a request's a copy with the user's payload, of its own properties (the engine's
    // messages are plain objects of one shape), never Object.create(message): a fresh message as
    // a prototype cost ~5 µs and garbage per entry
    const own: StreamMessage<unknown> = envelope
      ? { ...message, payload: envelope.payload }
      : message;
    const { payload } = own;
    const context = new EchoStreamContext([own, this.route.pattern]);
    const { handlers } = this.route;
    let value: unknown;
    try {
      if (handlers.length === 1) {
        // one handler (the usual case): awaited here, without the array, Promise.all and
        // resultOf's own promise of several
        value = await handlers[0](payload, context);
        if (isObservable(value)) value = await lastValueFrom(value, { defaultValue: undefined });
      } else {
        const values = await Promise.all(
          handlers.map((handler) => resultOf(handler(payload, context))),
        );
        value = values[handlers.length - 1];
      }
    } catch (err) {
      const verdict = rpcVerdict(err);
      // the engine retries a failure and dead-letters a NonRetryableError at once
      if (verdict.kind !== 'rpc') throw verdict.error;
      if (!request)
        throw new Error(`handler answered with an RpcException: ${answerText(verdict.error)}`);
      await this.replies.send(request, { kind: 'error', error: verdict.error, reason: 'rpc' });
      return;
    }
    if (request) await this.replies.send(request, { kind: 'value', value });
  };

  /** The route as the orchestrator's handler definition (its options resolved as a decorator's). */
  definition(defaults: Partial<StreamHandlerOptions>): HandlerDefinition {
    const { stream, group, options, name } = this.route;
    if (options.batch === true)
      throw new EchoStreamConfigError(
        `EchoStreamServer: ${name}: option 'batch' is not supported by the transport`,
      );
    const resolved = resolveHandlerOptions(stream, `EchoStreamServer ${name}`, defaults, options);
    return {
      stream,
      group,
      options,
      resolved: { ...resolved, codec: envelopeCodec(resolved.codec) },
      name,
      method: this.call as (arg: never) => unknown,
      instance: this,
      methodName: 'call',
    };
  }

  /** A request's dead letter answers its caller with an error reply (`'dead_letter'`). */
  deadLetter(): DeadLetterDefinition | undefined {
    if (!this.route.request) return undefined;
    const { stream, group, name } = this.route;
    return {
      stream,
      group,
      name,
      method: async (letter: DeadLetterMessage) => {
        const address = replyAddressOf(letter.fields);
        if (!address || this.now() > address.deadline) return;
        const message = `request dead-lettered (${letter.reason}): ${letter.error ?? 'no error text'}`;
        await this.replies.send(address, {
          kind: 'error',
          error: { status: 'error', message },
          reason: 'dead_letter',
        });
      },
    };
  }
}

/** A handler's value: awaited, and an Observable's last value (`undefined` when it emits none). */
async function resultOf(out: unknown): Promise<unknown> {
  const value: unknown = await out;
  return isObservable(value) ? lastValueFrom(value, { defaultValue: undefined }) : value;
}
