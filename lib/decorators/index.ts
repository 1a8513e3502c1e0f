export * from './dead-letter.decorator';
export * from './stream-handler.decorator';
