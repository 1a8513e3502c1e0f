import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type {
  EchoStreamDashboardOptions,
  ResolvedDashboardOptions,
} from './dashboard-options.interface';
import { DEFAULT_ALLOWED_HOSTS, parseAllowedHosts } from './http/host-check';

const PATH = /^(\/[A-Za-z0-9._~-]+)+$/;

/** Merges the defaults into `options`; a bad option throws naming it and its value. */
export function resolveDashboardOptions(
  options: EchoStreamDashboardOptions = {},
): ResolvedDashboardOptions {
  const where = 'EchoStreamDashboardModule.register()';
  const {
    path = '/echo-stream',
    readOnly = true,
    guards = [],
    streams = [],
    allowedHosts = [...DEFAULT_ALLOWED_HOSTS],
  } = options;
  if (typeof path !== 'string' || !PATH.test(path)) {
    throw new EchoStreamConfigError(
      `${where}: option 'path' must look like '/echo-stream' (URL-safe segments, no trailing slash), got ${JSON.stringify(path)}`,
    );
  }
  if (typeof readOnly !== 'boolean') {
    throw new EchoStreamConfigError(
      `${where}: option 'readOnly' must be a boolean, got ${JSON.stringify(readOnly)}`,
    );
  }
  if (!Array.isArray(guards) || guards.some((g) => typeof g !== 'function')) {
    throw new EchoStreamConfigError(`${where}: option 'guards' must be an array of guard classes`);
  }
  if (!Array.isArray(streams) || streams.some((s) => typeof s !== 'string' || s.length === 0)) {
    throw new EchoStreamConfigError(
      `${where}: option 'streams' must be an array of non-empty strings, got ${JSON.stringify(streams)}`,
    );
  }
  if (!readOnly && guards.length === 0) {
    throw new EchoStreamConfigError(
      `${where}: option 'readOnly: false' needs option 'guards': without a guard anyone who reaches the page could redrive or delete dead letters (add a guard that checks your app's auth, or keep readOnly: true)`,
    );
  }
  const hosts = Array.isArray(allowedHosts)
    ? parseAllowedHosts(allowedHosts)
    : 'it must be an array of host names';
  if (typeof hosts === 'string') {
    throw new EchoStreamConfigError(`${where}: option 'allowedHosts': ${hosts}`);
  }
  return {
    path,
    readOnly,
    guards: [...guards],
    streams: [...new Set(streams)],
    allowedHosts: hosts,
  };
}
