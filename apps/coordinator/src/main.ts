import { Logger } from '@nestjs/common';
import { createCoordinator, listenHost } from './bootstrap';
import { ConfigError } from './config/config-error';
import { loadConfig } from './config/config';
import { JsonLogger } from './logging/json-logger';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      new JsonLogger('error').fatal(`invalid configuration: ${error.message}`, 'Config');
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const app = await createCoordinator(config);
  Logger.overrideLogger(new JsonLogger(config.logLevel));
  const host = listenHost(config);
  await app.listen({ port: config.port, host });
  new Logger('Sluice').log(`listening on http://${host.includes(':') ? `[${host}]` : host}:${config.port}`);
}

main().catch((error: unknown) => {
  new JsonLogger('error').fatal(`failed to start: ${(error as Error).stack ?? String(error)}`, 'Sluice');
  process.exit(1);
});
