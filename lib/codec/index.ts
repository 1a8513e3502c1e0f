export * from './codecs';
