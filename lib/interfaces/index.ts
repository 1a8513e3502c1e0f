export * from './codec.interface';
export * from './consumer-snapshot.interface';
export * from './dead-letter-message.interface';
export * from './module-options.interface';
export * from './stream-handler-options.interface';
export * from './stream-message.interface';
