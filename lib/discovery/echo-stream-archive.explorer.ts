import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import {
  STREAM_ARCHIVE_METADATA,
  type StreamArchiveMetadata,
} from '../decorators/stream-archive.decorator';
import { messages } from '../config/messages';
import { prototypeOf } from './echo-stream.explorer';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { ArchivedEntry } from '../interfaces/lifecycle.interface';
import type { ArchiveMethod } from '../lifecycle/stream-retention';

/**
 * Finds `@StreamArchive` methods on every provider and controller (internal). Two for one stream
 * is an error: each entry must be archived once.
 */
@Injectable()
export class StreamArchiveExplorer implements OnModuleInit {
  private readonly logger = new Logger(StreamArchiveExplorer.name);
  private found = new Map<string, ArchiveMethod>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  /** The archive method of each stream, after module init. */
  get byStream(): ReadonlyMap<string, ArchiveMethod> {
    return this.found;
  }

  onModuleInit(): void {
    const found = new Map<string, ArchiveMethod>();
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    for (const wrapper of wrappers) {
      const prototype = prototypeOf(wrapper);
      if (!prototype) continue;
      const className = wrapper.metatype?.name ?? String(wrapper.name);
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = (prototype as Record<string, unknown>)[methodName];
        if (typeof method !== 'function') continue;
        const meta = this.reflector.get<StreamArchiveMetadata | undefined>(
          STREAM_ARCHIVE_METADATA,
          method,
        );
        if (!meta) continue;
        const name = `${className}.${methodName}`;
        if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
          this.logger.warn(messages.requestScoped(name));
          continue;
        }
        const instance = wrapper.instance as Record<string, (entries: ArchivedEntry[]) => unknown>;
        if (!instance) continue;
        const first = found.get(meta.stream);
        if (first) {
          throw new EchoStreamConfigError(
            `Two @StreamArchive('${meta.stream}') methods: ${first.name} and ${name}; ` +
              `each trimmed entry is archived once, by one method`,
          );
        }
        found.set(meta.stream, { name, call: instance[methodName].bind(instance) });
      }
    }
    this.found = found;
  }
}
