// Whether the numbers on screen can be trusted: the coordinator answers, and its store does.
// Fed by GET /health/ready (polled) and by every API answer (a 503 says which part is down).

const POLL_MS = 3000;
const listeners = new Set();
const state = { coordinator: 'ok', store: 'ok', overloaded: false, lastGoodAt: Date.now(), detail: '' };

function publish() {
  for (const listener of listeners) listener({ ...state });
}

function set(changes) {
  const before = JSON.stringify(state);
  Object.assign(state, changes);
  if (state.coordinator === 'ok' && state.store === 'ok' && !state.overloaded) state.lastGoodAt = Date.now();
  if (JSON.stringify(state) !== before) publish();
}

export function isDegraded() {
  return state.coordinator !== 'ok' || state.store !== 'ok' || state.overloaded;
}

export function onHealth(listener) {
  listeners.add(listener);
  listener({ ...state });
  return () => listeners.delete(listener);
}

/** What an API answer says about health. */
export function noteAnswer(status, code) {
  if (status === 503 && code === 'store_unavailable') set({ store: 'unavailable', detail: 'store_unavailable' });
  else if (status === 503 && code === 'overloaded') set({ overloaded: true, detail: 'overloaded' });
  else if (status < 500) set({ coordinator: 'ok', overloaded: false });
}

/** The coordinator did not answer at all. */
export function noteUnreachable(error) {
  set({ coordinator: 'unreachable', detail: error instanceof Error ? error.message : String(error) });
}

async function probe() {
  try {
    const response = await fetch('../health/ready', { cache: 'no-store' });
    const body = await response.json().catch(() => ({}));
    set({ coordinator: 'ok', store: response.status === 200 && body.status === 'ok' ? 'ok' : 'unavailable' });
  } catch (error) {
    noteUnreachable(error);
  }
}

/** Starts polling the readiness probe (public: no token). */
export function watchHealth() {
  void probe();
  setInterval(() => void probe(), POLL_MS);
}
