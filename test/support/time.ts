/**
 * Waits `ms` on the real clock (for stores whose clock is Redis's), never less: a timer can fire up
 * to a millisecond early (Node times it on a whole-millisecond clock), and the rest is waited out.
 */
export async function sleep(ms: number): Promise<void> {
  const endsAt = performance.now() + ms;
  await new Promise((resolve) => setTimeout(resolve, ms));
  for (let left = endsAt - performance.now(); left > 0; left = endsAt - performance.now()) {
    await new Promise((resolve) => setTimeout(resolve, Math.ceil(left)));
  }
}

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
