import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DASHBOARD_OPTIONS, SECURITY_HEADERS } from '../dashboard.constants';
import type { ResolvedDashboardOptions } from '../dashboard-options.interface';
import { requestPath } from '../dashboard-page';
import { isHostAllowed } from './host-check';

/**
 * The first step of every request under the mount path, before any guard (the app's global ones
 * included) and for paths no route matches: sets the security headers, so every answer carries
 * them whoever writes it, and answers a `Host` that `allowedHosts` does not list with a 421 and
 * no data (what stops a DNS-rebinding page). Works on the raw Node request and response, so the
 * Express and the Fastify adapter run it alike (internal).
 *
 * It also sends `GET {path}/` to the page at `{path}` (308): Express serves both, Fastify's
 * router has no route for the slash, and a Nest route path cannot end with one.
 */
@Injectable()
export class DashboardGateMiddleware implements NestMiddleware<RawRequest, ServerResponse> {
  constructor(@Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {}

  use(request: RawRequest, response: ServerResponse, next: (error?: unknown) => void): void {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
    const host = request.headers.host;
    if (isHostAllowed(host, this.options.allowedHosts)) {
      const page = this.pageOfSlash(request);
      if (page === undefined) {
        next();
        return;
      }
      response.statusCode = 308;
      response.setHeader('Location', page);
      response.end();
      return;
    }
    const message =
      host === undefined
        ? 'the request has no Host header'
        : `the dashboard does not answer to Host '${host.slice(0, 100)}' (see the allowedHosts option)`;
    response.statusCode = 421;
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.end(JSON.stringify({ statusCode: 421, error: 'Misdirected Request', message }));
  }

  /** `{prefix}{path}` for a GET or HEAD of `{prefix}{path}/`; otherwise `undefined`. */
  private pageOfSlash(request: RawRequest): string | undefined {
    if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
    // Express and middie keep the whole target (global prefix included) in originalUrl
    const path = requestPath(request.originalUrl ?? request.url ?? '');
    if (!path.endsWith('/')) return undefined;
    const page = path.replace(/\/+$/, '');
    return page.endsWith(this.options.path) ? page : undefined;
  }
}

/** The raw request; Express and @fastify/middie add `originalUrl`. */
type RawRequest = IncomingMessage & { originalUrl?: string };
