import type { SluiceKeys } from '../keys';
import type { EventHandler, EventStore } from '../roles/events';
import type { RedisEventSubscriber } from './event-subscriber';

/** Subscriptions over sharded pub/sub on the channels the scripts publish on. */
export function redisEvents(keys: SluiceKeys, subscriber: RedisEventSubscriber | undefined): EventStore {
  const subscribe = (channel: string, handler: EventHandler) => {
    if (!subscriber) throw new Error('RedisStore was built without a subscriber connection');
    return subscriber.subscribe(channel, handler);
  };
  return {
    subscribeDependency(ref, handler) {
      return subscribe(keys.dependency(ref.namespace, ref.dependency).events, handler);
    },

    subscribeNamespace(namespace, handler) {
      return subscribe(keys.namespace(namespace).events, handler);
    },
  };
}
