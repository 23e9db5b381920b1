import { expect, it } from 'vitest';
import { MemoryLimits } from '../../src/adapters/memory-limits.js';
import { limitsContract } from './limits-contract.js';

limitsContract('memory', async () => {
  const limits = new MemoryLimits();
  return { limits, close: () => limits.close() };
});

it('memory: idle keys are swept, keys with requests in flight are kept', async () => {
  const limits = new MemoryLimits();
  const held = await limits.enter('busy', 1);
  // Far more distinct keys than the sweep bound, each entering and leaving once.
  for (let i = 0; i < 5000; i++) await limits.leave((await limits.enter(`idle_${i}`, 1))!);
  expect(await limits.enter('busy', 1)).toBeNull();
  await limits.leave(held!);
  expect(await limits.enter('busy', 1)).not.toBeNull();
});
