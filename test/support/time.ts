/** Waits `ms` on the real clock (for stores whose clock is Redis's). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
