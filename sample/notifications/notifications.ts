/** The group of the notifications microservice on its patterns' streams. */
export const NOTIFICATIONS_GROUP = 'notifications';
/** The event billing emits for each charged order (a stream of that name). */
export const ORDER_CHARGED = 'notifications.order-charged';
/** The request that answers what this microservice sent. */
export const SENT_NOTIFICATIONS = 'notifications.sent';
/** The injection token of the notifications client (`ClientsModule`). */
export const NOTIFIER = 'NOTIFIER';

/** What billing tells the notifications microservice. */
export interface OrderCharged {
  orderId: string;
  sku: string;
  qty: number;
}

/** One notification sent: the order, its entry and the delivery that sent it. */
export interface SentNotification extends OrderCharged {
  entryId: string;
  attempts: number;
}

/** The answer of `SENT_NOTIFICATIONS`: the count and the newest ones of the instance that answered. */
export interface SentNotifications {
  count: number;
  newest: SentNotification[];
}
