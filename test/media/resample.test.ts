import { describe, expect, it } from 'vitest';
import { resample } from '../../src/media/resample.js';

function tone(freq: number, rate: number, seconds: number): Float32Array {
  return Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => 0.5 * Math.sin((2 * Math.PI * freq * i) / rate));
}

describe('resample', () => {
  it('keeps a tone through 16 kHz -> 22.05 kHz and back (error below -40 dB inside)', () => {
    const x = tone(440, 16000, 0.5);
    const up = resample(x, 16000, 22050);
    expect(up.length).toBe(Math.round(x.length * 22050 / 16000));
    const ref = tone(440, 22050, 0.5);
    let err = 0;
    let pow = 0;
    for (let i = 500; i < up.length - 500; i++) {
      err += (up[i]! - ref[i]!) ** 2;
      pow += ref[i]! ** 2;
    }
    expect(10 * Math.log10(err / pow)).toBeLessThan(-40);
  });

  it('removes content above the new Nyquist when downsampling (no aliasing)', () => {
    const x = tone(10000, 44100, 0.5); // above 8 kHz, must vanish at 16 kHz
    const down = resample(x, 44100, 16000);
    const rms = Math.sqrt(down.slice(200, -200).reduce((a, v) => a + v * v, 0) / (down.length - 400));
    expect(rms).toBeLessThan(0.01);
  });
});

describe('resample speed', () => {
  it('resamples a minute of audio in under two seconds', () => {
    const x = tone(300, 16000, 60);
    // CPU time, not wall time: other processes on a shared machine must not fail the test.
    const cpu = process.cpuUsage();
    resample(x, 16000, 22050);
    const used = process.cpuUsage(cpu);
    expect((used.user + used.system) / 1000).toBeLessThan(2000);
  });
});
