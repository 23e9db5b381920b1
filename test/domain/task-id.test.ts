import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newTaskId } from '../../src/domain/task.js';

const hex = () => randomUUID().replace(/-/g, '');

describe('task ids (UUIDv7 as 32 hex digits)', () => {
  it('carries the creation time, version 7 and the RFC 9562 variant', () => {
    const now = Date.UTC(2026, 10, 24, 3, 30);
    const id = newTaskId(now, hex());
    expect(id).toMatch(/^[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
    expect(parseInt(id.slice(0, 12), 16)).toBe(now);
  });

  it('sorts by creation time across milliseconds, so inserts go to the end of the id indexes', () => {
    const t0 = Date.now();
    const ids = Array.from({ length: 50 }, (_, i) => newTaskId(t0 + i, hex()));
    expect([...ids].sort()).toEqual(ids);
  });

  it('stays unique within one millisecond (74 random bits)', () => {
    const now = Date.now();
    const ids = new Set(Array.from({ length: 20_000 }, () => newTaskId(now, hex())));
    expect(ids.size).toBe(20_000);
  });
});
