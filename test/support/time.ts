/** Waits `ms` on the real clock (for stores whose clock is Redis's). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `intervalMs` until it returns true; rejects with `message` after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  message: () => string,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) throw new Error(`${message()} (waited ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
