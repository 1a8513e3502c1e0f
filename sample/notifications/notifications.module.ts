import { Module, type INestApplication } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
// A real app imports these from 'nestjs-echo-stream/microservices'.
import { EchoStreamClient, EchoStreamServer } from '../../lib/microservices';
import { SampleConfig, SampleConfigModule } from '../config';
import { NotificationsController } from './notifications.controller';
import { NOTIFICATIONS_GROUP, NOTIFIER } from './notifications';

/** The notifications microservice's handlers and the client billing and the route use. */
@Module({
  imports: [
    ClientsModule.registerAsync([
      {
        name: NOTIFIER,
        imports: [SampleConfigModule],
        inject: [SampleConfig],
        useFactory: (config: SampleConfig) => ({
          customClass: EchoStreamClient,
          options: { connection: config.redisUrl, timeoutMs: 5000 },
        }),
      },
    ]),
  ],
  controllers: [NotificationsController],
  exports: [ClientsModule],
})
export class NotificationsModule {}

/**
 * Connects the notifications microservice to the sample app (a hybrid): its loops join the app's
 * ConsumerStats and dashboard (`app`). Call before `app.listen()`.
 */
export async function connectNotifications(app: INestApplication): Promise<void> {
  const config = app.get(SampleConfig);
  app.connectMicroservice(
    {
      strategy: new EchoStreamServer({
        connection: config.redisUrl,
        consumerName: config.consumerName,
        group: NOTIFICATIONS_GROUP,
        shutdownTimeoutMs: 5000,
        app,
      }),
    },
    { inheritAppConfig: true },
  );
  await app.startAllMicroservices();
}
