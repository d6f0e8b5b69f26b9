/**
 * Stops a listener from being called again.
 * @example
 * const subscription = payments.onRetry(log); subscription.dispose();
 */
export interface Disposable {
  dispose(): void;
}

/**
 * An event: call it with a listener to subscribe; the returned {@link Disposable} unsubscribes.
 * @example
 * const { dispose } = sluice.onFallback(({ active }) => console.log(active ? 'local' : 'fleet'));
 */
export type Event<T> = (listener: (value: T) => void) => Disposable;

/** The sending side of an {@link Event}: a listener that throws never breaks the caller. */
export class EventEmitter<T> {
  private listeners: Array<(value: T) => void> = [];

  /** The subscribing side, to expose publicly. */
  readonly event: Event<T> = (listener) => {
    this.listeners = [...this.listeners, listener];
    return {
      dispose: () => {
        this.listeners = this.listeners.filter((l) => l !== listener);
      },
    };
  };

  /** True when somebody listens: lets callers skip building the value. */
  get active(): boolean {
    return this.listeners.length > 0;
  }

  emit(value: T): void {
    for (const listener of this.listeners) {
      try {
        listener(value);
      } catch {
        // A listener's failure is its own business.
      }
    }
  }
}
