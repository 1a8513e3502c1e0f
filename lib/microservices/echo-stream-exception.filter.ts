import { Catch, type RpcExceptionFilter } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';

/**
 * An exception filter for microservices on `EchoStreamServer` that hands every handler error to
 * the transport as it was thrown, instead of Nest's default answer (`'Internal server error'` for
 * anything but an `RpcException`): a `NonRetryableError` then dead-letters its entry at once, and
 * an error's own text reaches the logs and the dead-letter entry.
 *
 * @example
 * ```ts
 * const app = await NestFactory.createMicroservice(AppModule, { strategy: new EchoStreamServer({ group }) });
 * app.useGlobalFilters(new EchoStreamExceptionFilter());
 * ```
 */
@Catch()
export class EchoStreamExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}
