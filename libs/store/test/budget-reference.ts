/** Budget ratios as an operator writes them (decimals), for the ratio × magnitude tables. */
export const BUDGET_RATIOS = ['0.01', '0.07', '0.1', '0.29', '0.3', '0.57', '0.58', '0.7', '0.99', '1'];

/** Requests in the window: 1e2 to 1e9. */
export const BUDGET_MAGNITUDES = [1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/**
 * The reference: floor(ratio × requests + minRetriesPerSecond × windowSeconds) in exact decimal
 * arithmetic (BigInt), the ratio taken as the decimal it is written as.
 */
export function exactBudgetLimit(
  ratio: string,
  minRetriesPerSecond: number,
  windowSeconds: number,
  requests: number,
): number {
  const [whole, fraction = ''] = ratio.split('.');
  const scale = 10n ** BigInt(fraction.length);
  const ratioScaled = BigInt(whole) * scale + BigInt(fraction === '' ? '0' : fraction);
  return Number((ratioScaled * BigInt(requests)) / scale) + minRetriesPerSecond * windowSeconds;
}
