export * from './dead-letter.decorator';
export * from './stream-handler.decorator';
export * from './payload.decorator';
export * from './ctx.decorator';
export * from './stream-archive.decorator';
