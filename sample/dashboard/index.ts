export { DashboardTokenGuard, DASHBOARD_TOKEN_COOKIE } from './dashboard-token.guard';
export { sampleDashboardOptions } from './sample-dashboard.options';
