import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Store } from '@sluice/store';
import { STORE } from './store.provider';

/** How long boot waits for the store before serving degraded answers. */
const BOOT_WAIT_MS = 5000;

/** Waits for the store's connection at boot and closes it at shutdown. */
@Injectable()
export class StoreLifecycle implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Store');

  constructor(@Inject(STORE) private readonly store: Store) {}

  async onModuleInit(): Promise<void> {
    try {
      await this.store.waitUntilReady(BOOT_WAIT_MS);
    } catch (error) {
      this.logger.warn(`${(error as Error).message}: answering 503 store_unavailable until it is reachable`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
