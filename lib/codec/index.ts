export * from './codecs';
export * from './bounded-text';
