import { SetMetadata } from '@nestjs/common';
import { checkName } from './stream-handler.decorator';

/** Metadata key of `@StreamArchive` (namespaced so it never meets another package's). */
export const STREAM_ARCHIVE_METADATA = 'nestjs-echo-stream:stream-archive';

/** What `@StreamArchive` records on a method (internal). */
export interface StreamArchiveMetadata {
  stream: string;
}

/**
 * Makes the method receive the entries retention is about to trim from `stream`
 * (`ArchivedEntry[]`, a page at a time, oldest first). An entry is trimmed only after the method
 * returned (or resolved) for its page; a throw trims nothing and the page comes again next
 * interval. The stream needs a rule in the module option `retention`.
 *
 * @example
 * ```ts
 * @StreamArchive('orders')
 * async fold(entries: ArchivedEntry[]): Promise<void> { await appendToColdStorage(entries); }
 * ```
 */
export function StreamArchive(stream: string): MethodDecorator {
  checkName('StreamArchive', 'stream', stream);
  return SetMetadata<string, StreamArchiveMetadata>(STREAM_ARCHIVE_METADATA, { stream });
}
