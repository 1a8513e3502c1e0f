import { DynamicModule, Module, Provider } from '@nestjs/common';
import { EchoStreamCoreModule } from './echo-stream-core.module';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import {
  ECHO_STREAM_ASYNC_OPTIONS_TYPE,
  ECHO_STREAM_MODULE_OPTIONS,
  ECHO_STREAM_OPTIONS_TYPE,
  EchoStreamConfigurableModule,
} from './echo-stream.module-definition';
import { resolveOptions } from '../config/module-options';
import type { EchoStreamModuleOptions } from '../interfaces/module-options.interface';

const resolvedOptionsProvider: Provider = {
  provide: ECHO_STREAM_OPTIONS,
  useFactory: (options: EchoStreamModuleOptions) => resolveOptions(options),
  inject: [ECHO_STREAM_MODULE_OPTIONS],
};

/**
 * Registers Redis Streams consumer loops for every `@StreamHandler` method of the app, plus
 * `StreamProducer`, `ConsumerStats`, `EchoStreamAdmin` and `EchoStreamHealthIndicator`. Global:
 * register it once, in the root module.
 *
 * @example
 * ```ts
 * @Module({ imports: [EchoStreamModule.forRoot({ connection: 'redis://127.0.0.1:6379' })] })
 * export class AppModule {}
 * ```
 */
@Module({})
export class EchoStreamModule extends EchoStreamConfigurableModule {
  /** Synchronous registration with {@link EchoStreamModuleOptions}. */
  static forRoot(options: typeof ECHO_STREAM_OPTIONS_TYPE = {}): DynamicModule {
    return withCore(super.forRoot(options));
  }

  /** Registration with options from a factory, a class or an existing provider. */
  static forRootAsync(options: typeof ECHO_STREAM_ASYNC_OPTIONS_TYPE): DynamicModule {
    return withCore(super.forRootAsync(options));
  }
}

function withCore(base: DynamicModule): DynamicModule {
  return {
    ...base,
    global: true,
    imports: [...(base.imports ?? []), EchoStreamCoreModule],
    providers: [...(base.providers ?? []), resolvedOptionsProvider],
    exports: [...(base.exports ?? []), ECHO_STREAM_OPTIONS, EchoStreamCoreModule],
  };
}
