// What a user of the packed SDK writes, checked by a strict tsc against the package's own .d.ts
// (under moduleResolution nodenext and node10). Never run.
import {
  CoordinatorClient,
  Sluice,
  isBreakerOpenError,
  isGiveUpError,
  type DependencyOptions,
  type GiveUpReason,
  type RetryEvent,
} from '@sluice/client';
import { IdempotencyModule, SluiceModule, Sluice as NestSluice } from '@sluice/client/nest';

const options: DependencyOptions = { maxAttempts: 2, deadlineMs: 1000, idempotent: true };
// As the README writes it: an unset variable is an undefined token (exactOptionalPropertyTypes too).
const sluice = new Sluice({
  baseUrls: ['http://127.0.0.1:8080'],
  namespace: 'shop',
  token: process.env.SLUICE_TOKEN,
  logger: false,
});
const payments = sluice.dependency('payments', options);
payments.onRetry((event: RetryEvent) => void event.attempt);

export async function charge(orderId: string): Promise<string | GiveUpReason> {
  try {
    const receipt: { id: string } = await payments.execute(
      async ({ signal, headers }) => ({ id: `${orderId}:${signal.aborted}:${Object.keys(headers).length}` }),
      { idempotencyKey: orderId },
    );
    return receipt.id;
  } catch (error) {
    if (isGiveUpError(error)) return error.reason;
    if (isBreakerOpenError(error)) return 'breaker_open';
    throw error;
  }
}

// The Nest entry takes the main entry's classes: one Sluice, one CoordinatorClient.
const same: Sluice = new NestSluice({ baseUrls: ['http://127.0.0.1:8080'], namespace: 'shop' });
export const modules = [
  SluiceModule.forRoot({ baseUrls: ['http://127.0.0.1:8080'], namespace: 'shop', contextInterceptor: true }),
  IdempotencyModule.forRoot({ client: new CoordinatorClient({ baseUrl: 'http://127.0.0.1:8080', namespace: 'shop' }) }),
];
export const clients = [sluice, same];

// The types are real: a wrong call is an error.
// @ts-expect-error a dependency's name is a string
sluice.dependency(42);
