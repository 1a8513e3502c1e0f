import { Controller, Get, Inject, Logger } from '@nestjs/common';
import { ClientProxy, Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
// A real app imports this from 'nestjs-echo-stream/microservices'.
import { EchoStreamContext } from '../../lib/microservices';
import {
  NOTIFIER,
  ORDER_CHARGED,
  SENT_NOTIFICATIONS,
  type OrderCharged,
  type SentNotification,
  type SentNotifications,
} from './notifications';

/**
 * The notifications microservice, in the sample app as a hybrid: `@EventPattern` and
 * `@MessagePattern` handlers on EchoStreamServer (sample/main.ts connects it), and an HTTP route
 * that asks it through EchoStreamClient. `dedup: true`: billing emits each order's notification
 * under the order's branded id, so a charge retried after its emit sends it once.
 */
@Controller('notifications')
export class NotificationsController {
  private readonly logger = new Logger(NotificationsController.name);
  private readonly sent: SentNotification[] = [];

  constructor(@Inject(NOTIFIER) private readonly notifier: ClientProxy) {}

  @EventPattern<string>(ORDER_CHARGED, { dedup: true, maxDeliveries: 5 })
  notify(@Payload() event: OrderCharged, @Ctx() ctx: EchoStreamContext): void {
    this.sent.push({ ...event, entryId: ctx.getEntryId(), attempts: ctx.getAttempts() });
    this.logger.log(`order ${event.orderId} charged: notified (entry ${ctx.getEntryId()})`);
  }

  @MessagePattern<string>(SENT_NOTIFICATIONS)
  answer(@Payload() query: { newest?: number }): SentNotifications {
    const newest = Math.min(Math.max(Number(query?.newest) || 10, 1), 100);
    return {
      count: this.sent.length,
      newest: this.sent.slice(-newest).reverse(),
    };
  }

  /** `GET /notifications`: what an instance of the microservice sent, asked over Redis Streams. */
  @Get()
  list(): Promise<SentNotifications> {
    return lastValueFrom(this.notifier.send<SentNotifications>(SENT_NOTIFICATIONS, { newest: 10 }));
  }
}
