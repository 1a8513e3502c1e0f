export * from './dead-letter.decorator';
export * from './stream-handler.decorator';
export * from './stream-archive.decorator';
