import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { SampleConfig } from '../config';

/** The cookie a browser sends the token in (set it once, see the sample's README section). */
export const DASHBOARD_TOKEN_COOKIE = 'echo_dashboard_token';

type RequestWithHeaders = { headers: Record<string, string | string[] | undefined> };

/**
 * Lets a dashboard request through only with the sample's `dashboardToken`
 * (`ECHO_DASHBOARD_TOKEN`), sent as `Authorization: Bearer <token>` (scripts, curl) or as the
 * cookie `echo_dashboard_token=<token>` (a browser: the page's own requests carry it). A real
 * app checks its own session or SSO here instead.
 */
@Injectable()
export class DashboardTokenGuard implements CanActivate {
  constructor(private readonly config: SampleConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const expected = this.config.dashboardToken;
    if (expected === undefined) return false;
    const { headers } = context.switchToHttp().getRequest<RequestWithHeaders>();
    const offered = bearerToken(first(headers.authorization)) ?? cookieToken(first(headers.cookie));
    return offered !== undefined && sameSecret(offered, expected);
  }
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function bearerToken(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header.trim());
  return match?.[1];
}

function cookieToken(header: string | undefined): string | undefined {
  for (const part of header?.split(';') ?? []) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === DASHBOARD_TOKEN_COOKIE) {
      try {
        return decodeURIComponent(part.slice(at + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Compares digests in constant time, so the answer's timing says nothing about the token. */
function sameSecret(offered: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(offered), digest(expected));
}
