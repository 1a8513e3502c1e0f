import { Global, Module } from '@nestjs/common';
import { SampleConfig } from './sample.config';

/** Provides {@link SampleConfig} from the environment to the whole app (tests override it). */
@Global()
@Module({
  providers: [{ provide: SampleConfig, useFactory: () => SampleConfig.fromEnv() }],
  exports: [SampleConfig],
})
export class SampleConfigModule {}
