import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InFlightTicket, RequestLimits } from '../../src/ports/limits.js';

export interface LimitsUnderTest {
  /** One adapter, as one API node would hold it. */
  limits: RequestLimits;
  close(): Promise<void>;
}

/** Fresh key ids per test: adapters under test may share a store with other tests of the run. */
const newKey = () => `key_${randomUUID().replace(/-/g, '')}`;

async function consumeN(limits: RequestLimits, key: string, perSecond: number, n: number): Promise<boolean[]> {
  const out: boolean[] = [];
  for (let i = 0; i < n; i++) out.push(await limits.consumeRate(key, perSecond));
  return out;
}

/** What every RequestLimits adapter must do, whatever it stores the counts in. */
export function limitsContract(name: string, open: () => Promise<LimitsUnderTest>): void {
  describe(`RequestLimits contract: ${name}`, () => {
    let under: LimitsUnderTest;
    let limits: RequestLimits;
    beforeAll(async () => {
      under = await open();
      limits = under.limits;
    });
    afterAll(async () => under.close());

    it('rate: allows N in the second, refuses the next, allows again in the next window', async () => {
      const key = newKey();
      expect(await consumeN(limits, key, 3, 4)).toEqual([true, true, true, false]);
      await sleep(1100);
      expect(await consumeN(limits, key, 3, 4)).toEqual([true, true, true, false]);
    });

    it('rate: a fractional limit (0.5/s) allows one request per 2 seconds', async () => {
      const key = newKey();
      expect(await consumeN(limits, key, 0.5, 2)).toEqual([true, false]);
      await sleep(1100);
      expect(await limits.consumeRate(key, 0.5)).toBe(false);
      await sleep(1000);
      expect(await limits.consumeRate(key, 0.5)).toBe(true);
    });

    it('auth failures: N allowed in the window, then blocked with a wait; clients counted apart', async () => {
      const policy = { failures: 3, windowSeconds: 60, blockSeconds: 2 };
      const ip = `ip_${randomUUID()}`;
      const other = `ip_${randomUUID()}`;
      for (let i = 0; i < 3; i++) expect(await limits.recordAuthFailure(ip, policy)).toBeNull();
      const wait = await limits.recordAuthFailure(ip, policy);
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(2000);
      expect(await limits.recordAuthFailure(other, policy)).toBeNull();
      await sleep(2100);
      expect(await limits.recordAuthFailure(ip, policy)).toBeNull();
    });

    it('auth failures: authFailureWait reads the block without counting', async () => {
      const policy = { failures: 2, windowSeconds: 60, blockSeconds: 2 };
      const ip = `ip_${randomUUID()}`;
      expect(await limits.authFailureWait(ip, policy)).toBeNull(); // never seen
      for (let i = 0; i < 2; i++) expect(await limits.recordAuthFailure(ip, policy)).toBeNull();
      // Reading, however often, is not failing: still within the policy.
      for (let i = 0; i < 5; i++) expect(await limits.authFailureWait(ip, policy)).toBeNull();
      expect(await limits.recordAuthFailure(ip, policy)).toBeGreaterThan(0);
      const wait = await limits.authFailureWait(ip, policy);
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(2000);
      expect(await limits.authFailureWait(`ip_${randomUUID()}`, policy)).toBeNull();
      await sleep(2100);
      expect(await limits.authFailureWait(ip, policy)).toBeNull();
    });

    it('rate: keys have their own budgets', async () => {
      const a = newKey();
      const b = newKey();
      expect(await consumeN(limits, a, 1, 2)).toEqual([true, false]);
      expect(await consumeN(limits, b, 1, 2)).toEqual([true, false]);
    });

    it('in flight: admits up to the limit, refuses the next; leave frees a slot', async () => {
      const key = newKey();
      const held: InFlightTicket[] = [];
      for (let i = 0; i < 3; i++) {
        const t = await limits.enter(key, 3);
        expect(t?.keyId).toBe(key);
        held.push(t!);
      }
      expect(await limits.enter(key, 3)).toBeNull();
      await limits.leave(held.pop()!);
      const again = await limits.enter(key, 3);
      expect(again).not.toBeNull();
      expect(await limits.enter(key, 3)).toBeNull();
      for (const t of [...held, again!]) await limits.leave(t);
      // All freed: the whole limit is available again.
      const all = await Promise.all([1, 2, 3].map(() => limits.enter(key, 3)));
      expect(all.every((t) => t !== null)).toBe(true);
      for (const t of all) await limits.leave(t!);
    });

    it('in flight: keys have their own slots', async () => {
      const a = newKey();
      const b = newKey();
      const ta = await limits.enter(a, 1);
      expect(ta).not.toBeNull();
      expect(await limits.enter(a, 1)).toBeNull();
      const tb = await limits.enter(b, 1);
      expect(tb).not.toBeNull();
      await limits.leave(ta!);
      await limits.leave(tb!);
    });

    it('in flight: a key whose limit is raised admits more at once', async () => {
      const key = newKey();
      const t1 = await limits.enter(key, 1);
      expect(await limits.enter(key, 1)).toBeNull();
      const t2 = await limits.enter(key, 2);
      expect(t2).not.toBeNull();
      await limits.leave(t1!);
      await limits.leave(t2!);
    });
  });
}
