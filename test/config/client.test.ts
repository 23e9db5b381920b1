import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';

/** The client CLI's settings, in the one schema with the server's. */
describe('client CLI configuration', () => {
  it('SOUNDRY_TIMEOUT_SECONDS: 30 by default, 0 for no limit, whole seconds only', () => {
    expect(loadConfig({}).SOUNDRY_TIMEOUT_SECONDS).toBe(30);
    expect(loadConfig({ SOUNDRY_TIMEOUT_SECONDS: '0' }).SOUNDRY_TIMEOUT_SECONDS).toBe(0);
    expect(loadConfig({ SOUNDRY_TIMEOUT_SECONDS: '300' }).SOUNDRY_TIMEOUT_SECONDS).toBe(300);
    for (const bad of ['-1', '1.5', 'soon', '86401']) expect(() => loadConfig({ SOUNDRY_TIMEOUT_SECONDS: bad }), bad).toThrow(/SOUNDRY_TIMEOUT_SECONDS/);
  });
});
