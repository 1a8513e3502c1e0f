import type { EchoStreamDashboardOptions } from '../../lib';
import { DashboardTokenGuard } from './dashboard-token.guard';

/**
 * The sample's dashboard: read-write behind {@link DashboardTokenGuard} when a token is set
 * (`ECHO_DASHBOARD_TOKEN`), read-only otherwise (anyone who reaches the page could redrive or
 * delete dead letters). Read from the environment at import time: the module list is static.
 */
export function sampleDashboardOptions(
  env: NodeJS.ProcessEnv = process.env,
): EchoStreamDashboardOptions {
  return env.ECHO_DASHBOARD_TOKEN ? { readOnly: false, guards: [DashboardTokenGuard] } : {};
}
