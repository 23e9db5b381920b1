export const STATES = ['queued', 'running', 'success', 'failed'] as const;

/** Deterministic, so that a failing mix can be replayed: a 32-bit LCG, [0, 1). */
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}
