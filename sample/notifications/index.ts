export * from './notifications';
export * from './notifications.module';
