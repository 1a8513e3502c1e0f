/** The sample's dashboard: read-write only behind its token guard, read-only without a token. */
import type { ExecutionContext } from '@nestjs/common';
import { EchoStreamDashboardModule } from '../../lib';
import { SampleConfig } from '../../sample/config';
import { DashboardTokenGuard, sampleDashboardOptions } from '../../sample/dashboard';

const contextWith = (headers: Record<string, string>) =>
  ({
    switchToHttp: () => ({ getRequest: () => ({ headers }) }),
  }) as unknown as ExecutionContext;

describe('sample dashboard', () => {
  it('mounts read-only without ECHO_DASHBOARD_TOKEN, read-write behind the guard with it', () => {
    expect(sampleDashboardOptions({})).toEqual({});
    expect(sampleDashboardOptions({ ECHO_DASHBOARD_TOKEN: 's3cret' })).toEqual({
      readOnly: false,
      guards: [DashboardTokenGuard],
    });
    for (const env of [{}, { ECHO_DASHBOARD_TOKEN: 's3cret' }]) {
      expect(() => EchoStreamDashboardModule.register(sampleDashboardOptions(env))).not.toThrow();
    }
    expect(SampleConfig.fromEnv({ ECHO_DASHBOARD_TOKEN: 's3cret' }).dashboardToken).toBe('s3cret');
  });

  it('the guard takes the token as a Bearer header or a cookie, nothing else', () => {
    const guard = new DashboardTokenGuard(new SampleConfig({ dashboardToken: 's3cret' }));
    expect(guard.canActivate(contextWith({ authorization: 'Bearer s3cret' }))).toBe(true);
    expect(guard.canActivate(contextWith({ cookie: 'a=1; echo_dashboard_token=s3cret' }))).toBe(
      true,
    );
    for (const headers of <Array<Record<string, string>>>[
      {},
      { authorization: 'Bearer wrong' },
      { authorization: 's3cret' },
      { cookie: 'echo_dashboard_token=s3cre' },
      { cookie: 'other_token=s3cret' },
      { 'x-token': 's3cret' },
    ]) {
      expect([headers, guard.canActivate(contextWith(headers))]).toEqual([headers, false]);
    }
    const unset = new DashboardTokenGuard(new SampleConfig({}));
    expect(unset.canActivate(contextWith({ authorization: 'Bearer ' }))).toBe(false);
  });
});
