import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDfConfig, parseIni } from '../../../src/engines/enhance/deepfilter-config.js';

/** The sections the runtime reads, with the values of the published DeepFilterNet3 export's config.ini. */
const DFN3_INI = `[train]
seed = 43
model = deepfilternet3
dataloader_snrs = -100,-5,0,5,10,20,40

[df]
sr = 48000
fft_size = 960
hop_size = 480
nb_erb = 32
nb_df = 96
norm_tau = 1
lsnr_max = 35
lsnr_min = -15
min_nb_erb_freqs = 2
pad_mode = output
df_order = 5
df_lookahead = 2

[deepfilternet]
conv_lookahead = 2
conv_ch = 64
; a comment
# another
`;

describe('parseDfConfig: DeepFilterNet3 config.ini', () => {
  it('reads the published export\'s numbers', () => {
    expect(parseDfConfig(DFN3_INI)).toEqual({
      sampleRate: 48000, fftSize: 960, hopSize: 480, nbErb: 32, nbDf: 96, dfOrder: 5, dfLookahead: 2, convLookahead: 2,
      normTau: 1, minNbErbFreqs: 2, lsnrMin: -15, lsnrMax: 35, postFilter: false, postFilterBeta: 0.02, lookahead: 2,
    });
    expect(parseDfConfig(DFN3_INI.replace('conv_ch = 64', 'mask_pf = True\npf_beta = 0.05'))).toMatchObject({ postFilter: true, postFilterBeta: 0.05 });
  });

  it('takes df_order and df_lookahead from [deepfilternet] when [df] lacks them, and the lookahead as the larger one', () => {
    const moved = DFN3_INI.replace('df_order = 5\ndf_lookahead = 2\n', '').replace('conv_lookahead = 2', 'conv_lookahead = 1\ndf_order = 6\ndf_lookahead = 4');
    const c = parseDfConfig(moved);
    expect([c.dfOrder, c.dfLookahead, c.convLookahead, c.lookahead]).toEqual([6, 4, 1, 4]);
  });

  it('keeps norm_alpha where given, with the tau it implies', () => {
    const c = parseDfConfig(DFN3_INI.replace('norm_tau = 1', 'norm_alpha = 0.99'));
    expect(c.normAlpha).toBe(0.99);
    expect(c.normTau).toBeCloseTo(-480 / (48000 * Math.log(0.99)), 9);
  });

  it('refuses other models, missing keys and numbers that would size buffers wrongly', () => {
    expect(() => parseDfConfig(DFN3_INI.replace('model = deepfilternet3', 'model = deepfilternet2'))).toThrow(/"deepfilternet2"; only deepfilternet3/);
    expect(() => parseDfConfig(DFN3_INI.replace('sr = 48000\n', ''))).toThrow(/\[df\] sr/);
    expect(() => parseDfConfig(DFN3_INI.replace('conv_lookahead = 2', ''))).toThrow(/conv_lookahead: missing/);
    expect(() => parseDfConfig(DFN3_INI.replace('fft_size = 960', 'fft_size = 1e9'))).toThrow(/fft_size/);
    expect(() => parseDfConfig(DFN3_INI.replace('nb_df = 96', 'nb_df = 600'))).toThrow(/nb_df 600 exceeds the 481 frequency bins/);
    expect(() => parseDfConfig(DFN3_INI.replace('hop_size = 480', 'hop_size = 1000'))).toThrow(/hop_size 1000 exceeds/);
    expect(() => parseDfConfig(DFN3_INI.replace('nb_erb = 32', 'nb_erb = 300'))).toThrow(/nb_erb/);
    expect(() => parseDfConfig(DFN3_INI.replace('df_order = 5', 'df_order = -1'))).toThrow(/df_order/);
    expect(() => parseDfConfig(DFN3_INI.replace('df_order = 5', 'df_order = 2'))).toThrow(/df_lookahead 2 must be under df_order 2/);
    expect(() => parseDfConfig(DFN3_INI.replace('hop_size = 480', 'hop_size = 700'))).toThrow(/must divide fft_size 960/);
    expect(() => parseDfConfig(DFN3_INI.replace('conv_ch = 64', 'mask_pf = maybe'))).toThrow(/mask_pf/);
    expect(() => parseDfConfig(DFN3_INI.replace('norm_tau = 1\n', ''))).toThrow(/norm_tau: missing/);
    expect(() => parseDfConfig(DFN3_INI.replace('sr = 48000', 'sr = fast'))).toThrow(/\[df\] sr/);
    expect(() => parseDfConfig(`${DFN3_INI}${'x'.repeat(70_000)}`)).toThrow(/not a DeepFilterNet config/);
  });

  it('parses ini sections as configparser does (case-insensitive keys, ":" separators, values trimmed)', () => {
    const ini = parseIni('[a]\nKey : v 1 \n[b]\nx=1\n[a]\ny = 2\n');
    expect(Object.fromEntries(ini.get('a')!)).toEqual({ key: 'v 1', y: '2' });
    expect(ini.get('b')!.get('x')).toBe('1');
  });
});

/** The archive's own config.ini, where an unpacked copy is at hand (DFN3_CONFIG=path). */
const real = process.env.DFN3_CONFIG;
describe.skipIf(!real || !existsSync(real))('the published config.ini', () => {
  it('gives the numbers above', () => {
    expect(parseDfConfig(readFileSync(real!, 'utf8'))).toEqual(parseDfConfig(DFN3_INI));
  });
});
