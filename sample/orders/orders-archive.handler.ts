import { open } from 'node:fs/promises';
import { Injectable, Logger } from '@nestjs/common';
// A real app imports these from 'nestjs-echo-stream'.
import { StreamArchive, type ArchivedEntry } from '../../lib';
import { SampleConfig } from '../config';
import { ORDERS_STREAM } from './order';

/**
 * Cold storage for the orders stream: retention (module option, `maxLen` 1000 here) hands the
 * entries it is about to trim to this method, a page at a time, oldest first. They are appended
 * to a JSON-lines file (`ARCHIVE_FILE`) and flushed to disk before the method returns: only then
 * does retention trim them. A throw (disk full) trims nothing and the page comes again next
 * interval.
 */
@Injectable()
export class OrdersArchiveHandler {
  private readonly logger = new Logger(OrdersArchiveHandler.name);

  constructor(private readonly config: SampleConfig) {}

  @StreamArchive(ORDERS_STREAM)
  async fold(entries: ArchivedEntry[]): Promise<void> {
    const lines = entries.map((entry) =>
      JSON.stringify({ entryId: entry.entryId, id: entry.id, at: entry.at, fields: entry.fields }),
    );
    const file = await open(this.config.archiveFile, 'a');
    try {
      await file.write(`${lines.join('\n')}\n`);
      await file.datasync(); // on disk before the entries leave Redis
    } finally {
      await file.close();
    }
    this.logger.log(
      `archived ${entries.length} orders (${entries[0].entryId} .. ${entries[entries.length - 1].entryId}) to ${this.config.archiveFile}`,
    );
  }
}
