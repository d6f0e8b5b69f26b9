// GET /v1/{ns}/events read with fetch and a stream reader: EventSource cannot send the
// Authorization header. Reconnects with backoff until stopped; a refused token stops it.

import { path } from './api.js';
import { authHeaders } from './session.js';
import { noteAnswer, noteUnreachable } from './health.js';

const RECONNECT_MS = [500, 1000, 2000, 5000];

/** Splits a text stream into Server-Sent Events: `{ event, data }`, comments dropped. */
export function createSseParser(onEvent) {
  let buffer = '';
  let event = 'message';
  let data = [];
  const line = (text) => {
    if (text === '') {
      if (data.length > 0) onEvent({ event, data: data.join('\n') });
      event = 'message';
      data = [];
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? '' : text.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  };
  return (chunk) => {
    buffer += chunk;
    // A CR at the very end may be the first half of a CRLF: it waits for the next chunk.
    const lines = buffer.split(/\r\n|\r(?!$)|\n/);
    buffer = lines.pop() ?? '';
    lines.forEach(line);
  };
}

/**
 * Follows a namespace's events: `onEvent(name, data)` for each, `onState('live' | 'reconnecting' |
 * 'refused')` as the stream comes and goes. Returns `stop()`.
 */
export function followEvents(namespace, { onEvent, onState }) {
  const controller = new AbortController();
  let failures = 0;
  const parse = createSseParser(({ event, data }) => {
    try {
      onEvent(event, JSON.parse(data));
    } catch {
      // A frame that is not JSON is not ours to show.
    }
  });

  const connect = async () => {
    while (!controller.signal.aborted) {
      try {
        const response = await fetch(`${path('v1', namespace, 'events')}`, {
          headers: { accept: 'text/event-stream', ...authHeaders() },
          signal: controller.signal,
          cache: 'no-store',
        });
        noteAnswer(response.status);
        if (response.status === 401 || response.status === 403) {
          onState('refused');
          return;
        }
        if (response.status === 200 && response.body) {
          failures = 0;
          onState('live');
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            parse(value);
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
        noteUnreachable(error);
      }
      onState('reconnecting');
      const wait = RECONNECT_MS[Math.min(failures++, RECONNECT_MS.length - 1)];
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  };
  void connect();
  return () => controller.abort();
}
