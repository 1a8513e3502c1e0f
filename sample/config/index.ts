export { SampleConfig } from './sample.config';
export { SampleConfigModule } from './sample-config.module';
