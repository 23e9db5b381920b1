import { describe, expect, it } from 'vitest';
import { isDiskFull } from '../../src/domain/errors.js';

describe('isDiskFull', () => {
  it('recognises a full disk however the error reached the runner', () => {
    expect(isDiskFull(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))).toBe(true);
    expect(isDiskFull(Object.assign(new Error('quota'), { code: 'EDQUOT' }))).toBe(true);
    expect(isDiskFull(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }))).toBe(true);
    // ffmpeg's stderr, and an fs error that crossed a thread and lost its code.
    expect(isDiskFull(new Error('ffmpeg failed (exit 1): Error writing trailer of /x/output.wav: No space left on device'))).toBe(true);
    expect(isDiskFull(new Error('ENOSPC: no space left on device, open'))).toBe(true);
    expect(isDiskFull(new Error('upload failed', { cause: Object.assign(new Error('x'), { code: 'ENOSPC' }) }))).toBe(true);
  });

  it('leaves other errors alone', () => {
    expect(isDiskFull(new Error('ECONNRESET'))).toBe(false);
    expect(isDiskFull(Object.assign(new Error('gone'), { code: 'ENOENT' }))).toBe(false);
    expect(isDiskFull('No space')).toBe(false);
    expect(isDiskFull(undefined)).toBe(false);
  });
});
