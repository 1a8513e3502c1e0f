import type { CanActivate, Type } from '@nestjs/common';

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
   * @default true
   */
  readOnly?: boolean;
  /**
   * Guards run on every dashboard route (page, assets and API), as `@UseGuards()` would; any one
   * refusing blocks the request. Protect the dashboard with one before exposing it.
   * @default []
   */
  guards?: Type<CanActivate>[];
  /**
   * Streams shown besides those of the app's `@StreamHandler`s.
   * @default []
   */
  streams?: string[];
}

/** The options with their defaults (internal). */
export interface ResolvedDashboardOptions {
  path: string;
  readOnly: boolean;
  guards: Type<CanActivate>[];
  streams: string[];
}
