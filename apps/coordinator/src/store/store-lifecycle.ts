import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Store } from '@sluice/store';
import { STORE } from './store.provider';

/** Closes the store's connections when the app shuts down. */
@Injectable()
export class StoreLifecycle implements OnApplicationShutdown {
  constructor(@Inject(STORE) private readonly store: Store) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
