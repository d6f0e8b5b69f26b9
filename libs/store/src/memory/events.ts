import type { EventStore } from '../roles/events';
import type { MemoryContext } from './context';

/** Subscriptions to the channels the memory parts publish on (named by SluiceKeys, as in Redis). */
export function memoryEvents(context: MemoryContext): EventStore {
  const { keys, channels } = context;
  return {
    async subscribeDependency(ref, handler) {
      return channels.subscribe(keys.dependency(ref.namespace, ref.dependency).events, handler);
    },

    async subscribeNamespace(namespace, handler) {
      return channels.subscribe(keys.namespace(namespace).events, handler);
    },
  };
}
