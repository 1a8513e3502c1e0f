export { EchoStreamDashboardModule } from './echo-stream-dashboard.module';
export type { EchoStreamDashboardOptions } from './dashboard-options.interface';
export type * from './views/dashboard-views';
export type { RateSeries } from './views/rate-history';
