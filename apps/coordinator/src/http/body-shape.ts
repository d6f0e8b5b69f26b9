import type { ErrorDetail } from '@sluice/protocol';

/**
 * Limits on the shape of every JSON request body. The body is at most 1 MiB (body-limit.ts);
 * within that, a few kilobytes of `[[[[…` would overflow the stack of recursive code
 * (class-transformer does at about 1,500 levels), and a megabyte of keys costs more than linear
 * time in JSON.parse itself (V8 builds a hash table for a large object: 100k keys take 25 times
 * what 10k do) and in anything that walks them. So a large body is scanned as text while it is
 * received (JsonShapeScanner), before JSON.parse, and every parsed body once more (checkBodyShape).
 *
 * - `maxDepth`: the body object is level 1 and every array or object inside it one more. A delivery
 *   `payload` (any JSON value, at level 2) may thus nest 63 levels of its own: more than messages
 *   carry (serde_json stops at 128, System.Text.Json at 64, Elasticsearch mappings at 20), though a
 *   64 KiB payload made only of brackets could go deeper, and is refused.
 * - `maxProperties` per object: above what a 64 KiB payload object can hold (about 11,000 distinct
 *   keys at 6 bytes each, `"ab":0,`); objects with declared properties are held to those anyway.
 * - `maxItems` per array: above what a 64 KiB payload array can hold (32,768 one-digit items).
 */
export const BODY_LIMITS = { maxDepth: 64, maxProperties: 16_384, maxItems: 65_536 } as const;

export type BodyLimits = { readonly [K in keyof typeof BODY_LIMITS]: number };

/** Longest `field` (and property name inside a message) an error names; longer ones end in `…`. */
export const MAX_FIELD_LENGTH = 200;

/** `text`, cut to `max` characters with an ellipsis. */
export const clip = (text: string, max = MAX_FIELD_LENGTH): string =>
  text.length > max ? `${text.slice(0, max - 1)}\u2026` : text;

/** The dotted field path class-validator would name (`deps.2.latency`), or `body` for the body itself. */
export const fieldOf = (segments: readonly string[]): string =>
  segments.length === 0 ? 'body' : clip(segments.join('.'));

/** An array or object of the body, with how it was reached (kept only for containers). */
interface Frame {
  value: object;
  depth: number;
  key: string;
  parent: Frame | undefined;
}

/**
 * The first way `body` breaks `limits`, naming the field, or undefined. One pass with an explicit
 * stack (no recursion): time linear in the number of values, memory in the number of containers.
 */
export function checkBodyShape(body: unknown, limits: BodyLimits = BODY_LIMITS): ErrorDetail | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  if (isFlatWithin(body, limits)) return undefined;
  const stack: Frame[] = [{ value: body, depth: 1, key: '', parent: undefined }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { value, depth } = frame;
    if (Array.isArray(value)) {
      if (value.length > limits.maxItems) {
        return problem(frame, `must contain no more than ${limits.maxItems} elements`);
      }
      for (let index = 0; index < value.length; index++) {
        const item: unknown = value[index];
        if (typeof item !== 'object' || item === null) continue;
        const child: Frame = { value: item, depth: depth + 1, key: String(index), parent: frame };
        if (child.depth > limits.maxDepth) return tooDeep(child, limits);
        stack.push(child);
      }
      continue;
    }
    let count = 0;
    for (const key in value) {
      if (++count > limits.maxProperties) {
        return problem(frame, `must have no more than ${limits.maxProperties} properties`);
      }
      const item: unknown = (value as Record<string, unknown>)[key];
      if (typeof item !== 'object' || item === null) continue;
      const child: Frame = { value: item, depth: depth + 1, key, parent: frame };
      if (child.depth > limits.maxDepth) return tooDeep(child, limits);
      stack.push(child);
    }
  }
  return undefined;
}

/** An object of no more than maxProperties values, none an object or array: most bodies, checked with no allocation. */
function isFlatWithin(body: object, limits: BodyLimits): boolean {
  if (Array.isArray(body)) return false;
  let count = 0;
  for (const key in body) {
    if (++count > limits.maxProperties) return false;
    const item: unknown = (body as Record<string, unknown>)[key];
    if (typeof item === 'object' && item !== null) return false;
  }
  return true;
}

function tooDeep(frame: Frame, limits: BodyLimits): ErrorDetail {
  return deepDetail(pathOf(frame), limits);
}

function problem(frame: Frame, message: string): ErrorDetail {
  return limitDetail(pathOf(frame), message);
}

function pathOf(frame: Frame): string[] {
  const segments: string[] = [];
  for (let at: Frame | undefined = frame; at?.parent; at = at.parent) segments.push(at.key);
  return segments.reverse();
}

/** Names the property that holds the nesting (`payload`, for `payload.0.0.…`). */
function deepDetail(segments: string[], limits: BodyLimits): ErrorDetail {
  const property = [...segments].reverse().find((segment) => !INDEX.test(segment));
  const message = `is nested deeper than the limit of ${limits.maxDepth} levels (the body is level 1)`;
  return { field: fieldOf(segments), message: `${property === undefined ? 'body' : clip(property)} ${message}` };
}

function limitDetail(segments: string[], message: string): ErrorDetail {
  return { field: fieldOf(segments), message: `${nameOf(segments)} ${message}` };
}

const INDEX = /^(?:0|[1-9]\d*)$/;

/** The property a message speaks of: its name, `deps.2` for an item of an array, `body` for the body. */
export function nameOf(segments: readonly string[], place = 'body'): string {
  if (segments.length === 0) return place;
  const last = segments[segments.length - 1];
  return clip(INDEX.test(last) && segments.length > 1 ? `${segments[segments.length - 2]}.${last}` : last);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
/** The first bytes of a key kept for the field an error names. */
const KEY_BYTES = MAX_FIELD_LENGTH;

/** An array or object being read: its commas so far and, for an object, its current key's first bytes. */
interface TextFrame {
  array: boolean;
  commas: number;
  expectingKey: boolean;
  key: Buffer;
  keyLength: number;
}

/**
 * The same limits as checkBodyShape, on JSON text as it arrives, chunk by chunk: one pass over the
 * bytes, counting nesting and the commas of each array and object, so a body over a limit is
 * refused before it is parsed. Only structure is read (strings are skipped, escapes included);
 * anything malformed is left to the parser. Memory is one frame per level, reused.
 */
export class JsonShapeScanner {
  private readonly frames: TextFrame[] = [];
  private depth = 0;
  private inString = false;
  private escaped = false;
  private capturing: TextFrame | undefined;

  constructor(private readonly limits: BodyLimits = BODY_LIMITS) {}

  /** Reads the next chunk: the first problem so far, or undefined. */
  write(chunk: Uint8Array): ErrorDetail | undefined {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) {
          this.inString = false;
          this.capturing = undefined;
          continue;
        }
        const frame = this.capturing;
        if (frame && frame.keyLength < KEY_BYTES) frame.key[frame.keyLength++] = byte;
        continue;
      }
      if (byte === QUOTE) {
        this.inString = true;
        const top = this.depth > 0 ? this.frames[this.depth - 1] : undefined;
        if (top && top.expectingKey) {
          top.expectingKey = false;
          top.keyLength = 0;
          this.capturing = top;
        }
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        if (this.depth >= this.limits.maxDepth) return this.tooDeep();
        this.push(byte === OPEN_ARRAY);
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        if (this.depth > 0) this.depth--;
      } else if (byte === COMMA && this.depth > 0) {
        const top = this.frames[this.depth - 1];
        top.commas++;
        // n commas: n + 1 items or properties.
        if (top.array && top.commas >= this.limits.maxItems) {
          return this.problem(this.depth - 1, `must contain no more than ${this.limits.maxItems} elements`);
        }
        if (!top.array) {
          if (top.commas >= this.limits.maxProperties) {
            return this.problem(this.depth - 1, `must have no more than ${this.limits.maxProperties} properties`);
          }
          top.expectingKey = true;
        }
      }
    }
    return undefined;
  }

  private push(array: boolean): void {
    let frame = this.frames[this.depth];
    if (!frame) {
      frame = { array, commas: 0, expectingKey: false, key: Buffer.alloc(0), keyLength: 0 };
      this.frames[this.depth] = frame;
    }
    frame.array = array;
    frame.commas = 0;
    frame.expectingKey = !array;
    frame.keyLength = 0;
    if (!array && frame.key.length === 0) frame.key = Buffer.alloc(KEY_BYTES);
    this.depth++;
  }

  /** The path to the member being read in each of the first `levels` frames. */
  private segments(levels: number): string[] {
    return this.frames.slice(0, levels).map((frame) => (frame.array ? String(frame.commas) : keyText(frame)));
  }

  private tooDeep(): ErrorDetail {
    return deepDetail(this.segments(this.depth), this.limits);
  }

  private problem(level: number, message: string): ErrorDetail {
    return limitDetail(this.segments(level), message);
  }
}

/** A key from its first bytes: JSON escapes decoded where they are whole. */
function keyText(frame: TextFrame): string {
  const raw = frame.key.toString('utf8', 0, frame.keyLength);
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}
