/** A Server-Sent Events frame as a client sees it; `comment` frames are keep-alive lines. */
export interface SseFrame {
  event?: string;
  data?: unknown;
  comment?: string;
  /** When the frame arrived (Date.now()). */
  receivedAt: number;
}

export interface EventStreamClient {
  /** Resolves with the first frame (already received or still to come) that matches, or rejects after `timeoutMs`. */
  next(match: (frame: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>;
  /**
   * Resolves when the stream is over: `ended` when the server ended the response, `aborted` after
   * close(), `failed` when the connection broke (reset, destroyed) before an end.
   */
  ended: Promise<'ended' | 'aborted' | 'failed'>;
  /** Bytes received after the last complete frame (a frame cut off by the end). */
  unparsed(): string;
  frames: SseFrame[];
  close(): void;
}

/** Opens an SSE stream with fetch and parses it frame by frame. */
export async function openEventStream(url: string, headers: Record<string, string> = {}): Promise<EventStreamClient> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  if (response.status !== 200 || !response.body) throw new Error(`event stream answered ${response.status}`);
  const frames: SseFrame[] = [];
  const waiters = new Set<() => void>();
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let buffer = '';
  const ended = (async (): Promise<'ended' | 'aborted' | 'failed'> => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return 'ended';
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          frames.push(parseFrame(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
          waiters.forEach((wake) => wake());
        }
      }
    } catch {
      return controller.signal.aborted ? 'aborted' : 'failed';
    } finally {
      waiters.forEach((wake) => wake());
    }
  })();
  let streamEnded = false;
  void ended.then(() => (streamEnded = true));

  return {
    frames,
    ended,
    unparsed: () => buffer,
    close: () => controller.abort(),
    next(match, timeoutMs = 5000) {
      let seen = 0;
      return new Promise<SseFrame>((resolve, reject) => {
        const check = () => {
          for (; seen < frames.length; seen++) {
            if (match(frames[seen])) {
              cleanup();
              resolve(frames[seen]);
              return;
            }
          }
          if (streamEnded) {
            cleanup();
            reject(new Error('the event stream ended'));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no matching event within ${timeoutMs} ms; got ${JSON.stringify(frames)}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
}

function parseFrame(text: string): SseFrame {
  const frame: SseFrame = { receivedAt: Date.now() };
  for (const line of text.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1).trim();
    else if (line.startsWith('event:')) frame.event = line.slice(6).trim();
    else if (line.startsWith('data:')) frame.data = JSON.parse(line.slice(5).trim());
  }
  return frame;
}
