import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { EchoStreamModuleOptions } from '../interfaces/module-options.interface';

/**
 * `forRoot` / `forRootAsync` (useFactory, useClass, useExisting, inject, imports) come from Nest's
 * ConfigurableModuleBuilder.
 */
export const {
  ConfigurableModuleClass: EchoStreamConfigurableModule,
  MODULE_OPTIONS_TOKEN: ECHO_STREAM_MODULE_OPTIONS,
  OPTIONS_TYPE: ECHO_STREAM_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: ECHO_STREAM_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<EchoStreamModuleOptions>()
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createEchoStreamOptions')
  .build();
