import { z } from 'zod';
import { tooLong } from '../domain/podcast-limits.js';

/**
 * Field parsers shared by the kinds' request bodies. Numbers sent as numeric strings are accepted
 * (some clients stringify everything); anything else of the wrong type is refused with 100002.
 */
export const num = () =>
  z.union([z.number(), z.string().trim().regex(/^-?\d+(\.\d+)?$/).transform(Number)], {
    error: 'Invalid input: expected a number (or a numeric string such as "1.5")',
  });
export const int = () => num().pipe(z.number().int());

/** A string of at most `max` characters; longer is refused naming the length and the limit (100002). */
export const boundedString = (max: number) => z.string().max(max, { error: (iss) => tooLong(String(iss.input).length, max) });

/** An array of at most `max` items; more is refused naming the count and the limit (100002). */
export const boundedArray = <T extends z.ZodType>(item: T, max: number, unit = 'items') =>
  z.array(item).max(max, { error: (iss) => tooLong((iss.input as unknown[]).length, max, unit) });

/**
 * Whether a text gives a voice something to say: a letter or a digit somewhere. Emoji, symbols and punctuation
 * alone synthesize to nothing, and the TTS engines fail such a task later; creates refuse it at once with this.
 */
export function hasSomethingToSay(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}

/** URLs as sent (url, inputurl): stored with the task, so bounded like every stored field. */
export const URL_MAX_CHARS = 4096;

/** A required URL field as sent (checked for http(s) in prepare). */
export const urlString = () => boundedString(URL_MAX_CHARS).min(1);

/**
 * Stored parameters carry a version (`v`) so a worker of a later release can still run a task queued
 * by an earlier one. Release 0.1.0 stored the same fields without `v`: those read as version 1.
 * A later version adds its schema and an upgrade from the one before here, next to the kind's contract.
 */
export function versioned<S extends z.ZodObject<{ v: z.ZodLiteral<1> }>>(schema: S) {
  return z.preprocess((stored) => {
    if (stored && typeof stored === 'object' && !('v' in stored)) return { ...stored, v: 1 };
    return stored;
  }, schema);
}

/** http(s) only; the fetcher re-checks addresses (SSRF) when the worker downloads it. */
export function httpUrlOrNull(value: string): string | null {
  const trimmed = value.trim();
  try {
    const url = new URL(trimmed);
    return url.protocol === 'http:' || url.protocol === 'https:' ? trimmed : null;
  } catch {
    return null;
  }
}
