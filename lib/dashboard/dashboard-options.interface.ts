import type { CanActivate, Type } from '@nestjs/common';
import type { HostRules } from './http/host-check';

/** Options of `EchoStreamDashboardModule.register()`. */
export interface EchoStreamDashboardOptions {
  /**
   * Where the page and its JSON API are mounted (`{path}/api/...`): `/` followed by URL-safe
   * segments (letters, digits, `.`, `_`, `~`, `-`), no trailing slash.
   * @default '/echo-stream'
   */
  path?: string;
  /**
   * `true`: the mutating routes (redrive, delete) answer 403 and the page hides their buttons.
   * `false` needs `guards` (refused at bootstrap without one): whoever reaches the page could
   * otherwise move or delete dead letters.
   * @default true
   */
  readOnly?: boolean;
  /**
   * Guards run on every dashboard route (page, assets and API), as `@UseGuards()` would; any one
   * refusing blocks the request. Protect the dashboard with one before exposing it; required with
   * `readOnly: false`.
   * @default []
   */
  guards?: Type<CanActivate>[];
  /**
   * Streams shown besides those of the app's `@StreamHandler`s.
   * @default []
   */
  streams?: string[];
  /**
   * The `Host` names the dashboard answers (any other gets a 421 and no data, on every route
   * under `path`): what stops a DNS-rebinding page, whose own name resolves to the app. `host`
   * allows any port, `host:port` pins one, IPv6 in brackets (`[::1]`); matched without regard to
   * case. `['*']` turns the check off (behind a proxy that checks `Host` itself). A mutation
   * also needs an `Origin` whose host is allowed and is the request's `Host`.
   * @default ['localhost', '127.0.0.1', '[::1]']
   */
  allowedHosts?: string[];
}

/** The options with their defaults (internal). */
export interface ResolvedDashboardOptions {
  path: string;
  readOnly: boolean;
  guards: Type<CanActivate>[];
  streams: string[];
  allowedHosts: HostRules;
}
