import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { ConfigError } from '../config/config-error';
import { readTokensFile } from '../config/tokens';
import { TokenRegistry } from './token-registry';

/** How often the tokens file's stat is read: a rotation takes effect within about this long. */
export const TOKENS_FILE_POLL_MS = 250;

/**
 * Reloads `SLUICE_TOKENS_FILE` without a restart: on SIGHUP, and when the file changes (its stat
 * is polled, which also follows a file replaced by rename or a Kubernetes secret's symlink swap).
 * A file that does not read or validate keeps the tokens in use and says why.
 */
@Injectable()
export class TokensFileReloader implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Tokens');
  private readonly onSignal = () => this.reload('SIGHUP');
  private readonly onChange = (current: Stats, previous: Stats) => {
    if (current.mtimeMs !== previous.mtimeMs || current.ino !== previous.ino || current.size !== previous.size) {
      this.reload('file changed');
    }
  };

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly registry: TokenRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.tokensFile) return;
    process.on('SIGHUP', this.onSignal);
    watchFile(this.config.tokensFile, { interval: TOKENS_FILE_POLL_MS, persistent: false }, this.onChange);
  }

  onApplicationShutdown(): void {
    if (!this.config.tokensFile) return;
    process.removeListener('SIGHUP', this.onSignal);
    unwatchFile(this.config.tokensFile, this.onChange);
  }

  /** Reads the file again; answers whether its tokens are now the ones in use. */
  reload(why: string): boolean {
    const file = this.config.tokensFile;
    if (!file) return false;
    try {
      this.registry.replace(readTokensFile(file, 'SLUICE_TOKENS_FILE'));
    } catch (error) {
      const reason = error instanceof ConfigError ? error.message : (error as Error).message;
      this.logger.warn(`${why}: kept the ${this.registry.ids.length} tokens in use; ${file} was not loaded: ${reason}`);
      return false;
    }
    this.logger.log(
      `${why}: reloaded ${this.registry.ids.length} tokens from ${file} (${this.registry.ids.join(', ')})`,
    );
    return true;
  }
}
