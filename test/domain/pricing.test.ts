import { describe, expect, it } from 'vitest';
import { amountToCharge, billableMinutes, perMinuteCredits, podcastCredits, ttsCredits } from '../../src/domain/pricing.js';

describe("the spec's billing examples", () => {
  it('TTS: 60 characters cost 1, 215 cost 3; characters are code points', () => {
    expect(ttsCredits('a'.repeat(60))).toBe(1);
    expect(ttsCredits('a'.repeat(215))).toBe(3);
    expect(ttsCredits('a'.repeat(100))).toBe(1);
    expect(ttsCredits('a'.repeat(101))).toBe(2);
    expect(ttsCredits('你'.repeat(100))).toBe(1);
    expect(ttsCredits('😀'.repeat(100))).toBe(1); // surrogate pairs count once
  });

  it('separation and enhancement: 1-60 s is 1 min, 61 s 2, 119 s 2, 121 s 3', () => {
    expect(billableMinutes(1)).toBe(1);
    expect(billableMinutes(60)).toBe(1);
    expect(billableMinutes(61)).toBe(2);
    expect(billableMinutes(119)).toBe(2);
    expect(billableMinutes(120)).toBe(2);
    expect(billableMinutes(121)).toBe(3);
    expect(billableMinutes(180)).toBe(3);
    expect(billableMinutes(60.0004)).toBe(1); // container padding below a millisecond does not add a minute
    // A codec's priming and padding is not billed either (60 s as ADTS AAC decodes to 60.024 s, WMA to 60.032 s).
    expect(billableMinutes(60.024)).toBe(1);
    expect(billableMinutes(60.5)).toBe(1);
    expect(billableMinutes(60.501)).toBe(2);
    expect(billableMinutes(3600.3)).toBe(60);
    expect(perMinuteCredits(121, 5)).toBe(15);
  });

  it('podcast audio: 0.5, 1.5 and 2.5 minutes cost 10, 10 and 20', () => {
    expect(podcastCredits(30)).toBe(10);
    expect(podcastCredits(90)).toBe(10);
    expect(podcastCredits(150)).toBe(20);
    expect(podcastCredits(0)).toBe(10);
    expect(podcastCredits(600)).toBe(100);
  });

  it('a low balance ends at zero, never below', () => {
    expect(amountToCharge(20, 7)).toBe(7);
    expect(amountToCharge(20, 0)).toBe(0);
    expect(amountToCharge(3, 100)).toBe(3);
  });
});
