import { Global, Module } from '@nestjs/common';
import { Registry, register } from 'prom-client';
import { SampleConfig } from './sample.config';

/**
 * Provides {@link SampleConfig} from the environment and the prom-client registry `GET /metrics`
 * serves (the default one, where Node's metrics go too) to the whole app. Tests override either:
 * two instances of the app in one test process each need a registry of their own.
 */
@Global()
@Module({
  providers: [
    { provide: SampleConfig, useFactory: () => SampleConfig.fromEnv() },
    { provide: Registry, useValue: register },
  ],
  exports: [SampleConfig, Registry],
})
export class SampleConfigModule {}
