import {
  Inject,
  Module,
  RequestMethod,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
} from '@nestjs/common';
import { DASHBOARD_OPTIONS } from './dashboard.constants';
import { DashboardGateMiddleware } from './http/dashboard-gate.middleware';
import type {
  EchoStreamDashboardOptions,
  ResolvedDashboardOptions,
} from './dashboard-options.interface';
import { mountDashboardController } from './http/dashboard.controller';
import { DashboardService } from './dashboard.service';
import { resolveDashboardOptions } from './resolve-dashboard-options';

/**
 * A page plus a JSON API under `path` (default `/echo-stream`) showing every stream of the app's
 * handlers (and `streams`): groups, consumers, state, rates, lag, pending, oldest pending, dead
 * letters, a group's PEL, the dead letters and the stream's tail; with `readOnly: false` also
 * redrive and delete dead letters. Import it next to `EchoStreamModule`. Works on the Express
 * and the Fastify adapter; needs neither at runtime beyond the one the app uses.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     EchoStreamModule.forRoot({ connection: 'redis://127.0.0.1:6379' }),
 *     EchoStreamDashboardModule.register({ guards: [AdminGuard], readOnly: false }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({})
export class EchoStreamDashboardModule implements NestModule {
  constructor(@Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {}

  /** Mounts the dashboard with {@link EchoStreamDashboardOptions}; a bad option throws at once. */
  static register(options: EchoStreamDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: EchoStreamDashboardModule,
      controllers: [mountDashboardController(resolved)],
      providers: [{ provide: DASHBOARD_OPTIONS, useValue: resolved }, DashboardService],
    };
  }

  /** The gate (security headers, host check) runs first on every request under the mount path. */
  configure(consumer: MiddlewareConsumer): void {
    const { path } = this.options;
    consumer
      .apply(DashboardGateMiddleware)
      .forRoutes(
        { path, method: RequestMethod.ALL },
        { path: `${path}/*rest`, method: RequestMethod.ALL },
      );
  }
}
