import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import type { DeadLetterDefinition, HandlerDefinition } from '../config/handler-definitions';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import { messages } from '../config/messages';
import { resolveHandlerOptions, type ResolvedModuleOptions } from '../config/module-options';
import { EchoStreamMetadataAccessor } from './echo-stream-metadata.accessor';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';

/**
 * Finds `@StreamHandler` and `@DeadLetter` methods on every provider and controller and turns them
 * into plain definitions. It never talks to Redis (internal).
 */
@Injectable()
export class EchoStreamExplorer implements OnModuleInit {
  private readonly logger = new Logger(EchoStreamExplorer.name);
  private handlerDefinitions: HandlerDefinition[] = [];
  private deadLetterDefinitions: DeadLetterDefinition[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: EchoStreamMetadataAccessor,
    @Inject(ECHO_STREAM_OPTIONS) private readonly options: ResolvedModuleOptions,
  ) {}

  /** The discovered handlers, after module init. */
  get handlers(): readonly HandlerDefinition[] {
    return this.handlerDefinitions;
  }

  /** The discovered dead-letter handlers, after module init. */
  get deadLetters(): readonly DeadLetterDefinition[] {
    return this.deadLetterDefinitions;
  }

  onModuleInit(): void {
    this.explore();
  }

  /**
   * Scans the app once; a duplicate stream + group is an error, and so is a bad handler option
   * (each handler's options are resolved here, once, for every part of the runtime that reads them).
   */
  explore(): void {
    const handlers: HandlerDefinition[] = [];
    const deadLetters: DeadLetterDefinition[] = [];
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    for (const wrapper of wrappers) {
      const prototype = prototypeOf(wrapper);
      if (!prototype) continue;
      const className = wrapper.metatype?.name ?? String(wrapper.name);
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = (prototype as Record<string, unknown>)[methodName];
        const handlerMeta = this.accessor.streamHandlers(method);
        const deadLetterMeta = this.accessor.deadLetter(method);
        if (handlerMeta.length === 0 && !deadLetterMeta) continue;
        const name = `${className}.${methodName}`;
        if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
          this.logger.warn(messages.requestScoped(name));
          continue;
        }
        const instance = wrapper.instance as Record<string, (arg: never) => unknown> | undefined;
        if (!instance) continue;
        const bound = instance[methodName].bind(instance) as (arg: never) => unknown;
        for (const meta of handlerMeta) {
          handlers.push({
            stream: meta.stream,
            group: meta.group,
            options: meta.options,
            resolved: resolveHandlerOptions(
              meta.stream,
              `@StreamHandler('${meta.stream}', '${meta.group}') on ${name}`,
              this.options.defaults,
              meta.options,
            ),
            name,
            method: bound,
            instance,
            methodName,
          });
        }
        if (deadLetterMeta) {
          deadLetters.push({
            stream: deadLetterMeta.stream,
            group: deadLetterMeta.group,
            name,
            method: bound as DeadLetterDefinition['method'],
          });
        }
      }
    }
    checkUnique(handlers);
    this.handlerDefinitions = handlers;
    this.deadLetterDefinitions = deadLetters;
  }
}

/** The prototype to scan for decorated methods (the instance's, else the class's). */
export function prototypeOf(wrapper: InstanceWrapper): object | undefined {
  const instance = wrapper.instance as object | undefined;
  if (instance && typeof instance === 'object') return Object.getPrototypeOf(instance) as object;
  const metatype: unknown = wrapper.metatype;
  return typeof metatype === 'function' ? (metatype.prototype as object | undefined) : undefined;
}

function checkUnique(handlers: readonly HandlerDefinition[]): void {
  const byKey = new Map<string, string>();
  for (const handler of handlers) {
    const key = `${handler.stream}\u0000${handler.group}`;
    const first = byKey.get(key);
    if (first !== undefined) {
      throw new EchoStreamConfigError(
        messages.duplicateHandler(handler.stream, handler.group, first, handler.name),
      );
    }
    byKey.set(key, handler.name);
  }
}
