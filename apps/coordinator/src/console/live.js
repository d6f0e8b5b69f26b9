// What keeps a page current: a refresh now and every few seconds, the namespace's breaker events
// as they come, and a redraw when health changes. Shared by the Fleet and Dependency pages.

import { h, render } from './dom.js';
import { describeError } from './api.js';
import { followEvents } from './events.js';
import { clock } from './format.js';
import { isDegraded, onHealth } from './health.js';
import { notice } from './widgets.js';

const REFRESH_MS = 2000;
const STREAM_STATES = {
  live: 'Live: breaker changes arrive as they happen',
  reconnecting: 'Event stream lost: reconnecting…',
  refused: 'The event stream refused the token',
};
const STREAM_DEGRADED = 'Event stream connected, but the coordinator is degraded: changes may be late or missing';

/** A breaker event's data as a breaker reading. */
export function breakerOfEvent(data) {
  return {
    dependency: data.dep,
    state: data.state,
    since: data.since,
    openUntil: data.openUntil,
    reason: data.reason ?? null,
  };
}

/** The notice for a refresh that failed: when, and why; the numbers shown are older. */
export function refreshFailed(error) {
  return notice('error', `Refresh failed at ${clock(Date.now())}: ${describeError(error)}`);
}

/**
 * Starts keeping a page live: `refresh()` now and every REFRESH_MS (never two at once), `onBreaker(reading)`
 * for each breaker event of `namespace`, `draw()` on health changes. Returns `{ stream, stop }`:
 * `stream` is an element saying how the event stream is.
 */
export function keepLive({ namespace, refresh, onBreaker, draw }) {
  const stream = h('span', { class: 'stream' }, 'Connecting to the event stream…');
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      await refresh();
    } finally {
      running = false;
    }
  };
  let streamState = null;
  // While the coordinator or its store is degraded (the red banner), "Live" would not be true.
  const showStream = () =>
    streamState &&
    render(stream, streamState === 'live' && isDegraded() ? STREAM_DEGRADED : STREAM_STATES[streamState]);
  const stopEvents = followEvents(namespace, {
    onEvent: (name, data) => name === 'breaker' && onBreaker(breakerOfEvent(data)),
    onState: (state) => {
      streamState = state;
      showStream();
    },
  });
  void tick();
  const timer = setInterval(() => void tick(), REFRESH_MS);
  const stopHealth = onHealth(() => {
    showStream();
    draw();
  });
  return {
    stream,
    stop() {
      clearInterval(timer);
      stopEvents();
      stopHealth();
    },
  };
}
