import {
  Injectable,
  Logger,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { tap, type Observable } from 'rxjs';
// A real app imports these from 'nestjs-echo-stream'.
import { ECHO_STREAM_CONTEXT_TYPE, type StreamMessage } from '../../lib';

/**
 * Wraps the stream handlers (`@UseInterceptors` on their classes): logs how long each call took
 * and how it ended. Stream handlers run through Nest's pipeline like HTTP routes do, with the
 * context type `'echo-stream'` and the `StreamMessage` (or the batch's array) as the RPC context.
 */
@Injectable()
export class StreamLoggingInterceptor implements NestInterceptor {
  private readonly logger = new Logger(StreamLoggingInterceptor.name);

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType<string>() !== ECHO_STREAM_CONTEXT_TYPE) return next.handle();
    const ctx = context.switchToRpc().getContext<StreamMessage | StreamMessage[]>();
    const what = Array.isArray(ctx)
      ? `a batch of ${ctx.length} from ${ctx[0]?.stream}/${ctx[0]?.group}`
      : `${ctx.stream}/${ctx.group} entry ${ctx.entryId} (attempt ${ctx.attempts})`;
    const handler = `${context.getClass().name}.${context.getHandler().name}`;
    const started = performance.now();
    const took = () => `${(performance.now() - started).toFixed(1)} ms`;
    return next.handle().pipe(
      tap({
        next: () => this.logger.debug(`${handler} handled ${what} in ${took()}`),
        error: (err: unknown) =>
          this.logger.debug(
            `${handler} failed on ${what} after ${took()}: ${err instanceof Error ? err.message : String(err)}`,
          ),
      }),
    );
  }
}
