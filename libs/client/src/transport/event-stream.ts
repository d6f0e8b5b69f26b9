import type { Readable } from 'node:stream';

/** One Server-Sent Events frame; a comment (keep-alive) frame has neither event nor data. */
export interface EventFrame {
  event?: string;
  data?: string;
}

/**
 * Reads an SSE stream frame by frame until it ends; `onActivity` hears every chunk (keep-alive
 * comments included), so a caller can tell a silent, dead stream from a quiet one.
 */
export async function readEventStream(
  stream: Readable,
  onFrame: (frame: EventFrame) => void,
  onActivity: () => void,
): Promise<void> {
  stream.setEncoding('utf8');
  let buffer = '';
  for await (const chunk of stream) {
    onActivity();
    buffer += (chunk as string).replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (frame) onFrame(frame);
    }
  }
}

function parseFrame(text: string): EventFrame | undefined {
  const frame: EventFrame = {};
  const data: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') frame.event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length > 0) frame.data = data.join('\n');
  return frame.event === undefined && frame.data === undefined ? undefined : frame;
}
