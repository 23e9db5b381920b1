/**
 * The standard-scores bench's own logic on made-up scores (no audio, no Python: the scores themselves come from the
 * standard implementations in harness/enhance_scores.py): which condition a pair is in, the means and their deltas
 * against the unprocessed input, the TS-STOI cross-check, and that rewriting the section leaves the rest of
 * bench/results/enhance.md alone.
 */
import { describe, expect, it } from 'vitest';
import {
  aggregate, conditionOrder, mergeRuns, pairCondition, pairsTable, replaceSection, ScoredItems, stoiCrossCheck,
  REAL_NOISY_CONDITION, type RunInfo, type ScoredItem, type Scores,
} from '../../bench/enhance-scores-table.js';
import { renderScores, SECTION } from '../../bench/enhance-scores-doc.js';

const dns = { dnsmos_sig: 3, dnsmos_bak: 3, dnsmos_ovrl: 2.5, dnsmos_p808: 3 };
function item(condition: string, system: string, input: string, s: Partial<Scores>, extra: Partial<ScoredItem> = {}): ScoredItem {
  return { file: 'x.wav', input, condition, system, scores: { ...dns, ...s }, ...extra };
}

describe('enhance-scores bench logic', () => {
  it('names the condition of each kind of corpus pair and orders them noisy (falling SNR), reverberant, reverberant+noisy', () => {
    expect(pairCondition({ file: 'noisy/a_snr00.wav', clean: 'c', snr_db: 0 })).toBe('noisy 0 dB');
    expect(pairCondition({ file: 'reverb/a_rev.wav', clean: 'c', rir_src: 'r' })).toBe('reverberant');
    expect(pairCondition({ file: 'reverb/a_rev_noisy.wav', clean: 'c', rir_src: 'r', noise_src: 'n', snr_db: 5 })).toBe('reverberant+noisy 5 dB');
    expect(pairCondition({ file: 'long_silences/x.wav', clean: 'c' })).toBeNull();
    const conds = ['reverberant+noisy 5 dB', 'noisy 0 dB', 'reverberant', 'noisy 10 dB', 'noisy 5 dB'];
    expect(conds.sort(conditionOrder)).toEqual(['noisy 10 dB', 'noisy 5 dB', 'noisy 0 dB', 'reverberant', 'reverberant+noisy 5 dB']);
  });

  it('averages per condition and system, skips scores that could not be computed, and adds the over-all rows', () => {
    const items = [
      item('noisy 0 dB', 'unprocessed', 'a', { pesq_wb: 1.0, stoi: 0.6, si_sdr: 0 }),
      item('noisy 0 dB', 'unprocessed', 'b', { pesq_wb: 1.2, stoi: 0.7, si_sdr: 1 }),
      item('noisy 0 dB', 'chain', 'a', { pesq_wb: 2.0, stoi: 0.8, si_sdr: 10 }, { rtf: 0.1, engines: ['gtcrn'] }),
      // A chain that cut audio: no intrusive scores, DNSMOS still there.
      item('noisy 0 dB', 'chain', 'b', { pesq_wb: null, stoi: null, si_sdr: null, dnsmos_ovrl: 3.5 }, { rtf: 0.3, engines: ['gtcrn', 'webrtc-vad'], note: 'audio was cut' }),
      item('reverberant', 'unprocessed', 'c', { pesq_wb: 1.5, stoi: 0.9, si_sdr: 2 }),
    ];
    const aggs = aggregate(items, { allLabel: 'all' });
    expect(aggs.map((a) => `${a.condition}/${a.system}`)).toEqual(['noisy 0 dB/unprocessed', 'noisy 0 dB/chain', 'reverberant/unprocessed', 'all/unprocessed', 'all/chain']);
    const chain = aggs[1]!;
    expect(chain.files).toBe(2);
    expect(chain.count.pesq_wb).toBe(1);
    expect(chain.mean.pesq_wb).toBe(2.0);
    expect(chain.mean.dnsmos_ovrl).toBe(3.0);
    expect(chain.rtf).toBeCloseTo(0.2, 12);
    expect(chain.engines).toEqual(['gtcrn', 'webrtc-vad']);
    expect(aggs[3]!.mean.pesq_wb).toBeCloseTo(3.7 / 3, 12);
    const table = pairsTable(aggs.filter((a) => a.condition === 'noisy 0 dB'));
    const row = table.split('\n').find((l) => l.startsWith('| noisy 0 dB | chain'))!;
    const cells = row.split('|').map((c) => c.trim());
    // PESQ 2.00 over 1 of 2 files, +0.90 over the unprocessed mean 1.10; SI-SDR +9.50 over 0.50.
    expect(cells.slice(5, 7)).toEqual(['2.00 (1/2)', '+0.90']);
    expect(cells.slice(9, 11)).toEqual(['10.00 (1/2)', '+9.50']);
    expect(cells[14]).toBe('+0.50');
  });

  it('sets Soundry\'s STOI against pystoi only where both exist, and names the largest difference', () => {
    const x = stoiCrossCheck([
      item('noisy 0 dB', 'a', 'p', { stoi: 0.8 }, { tsStoi: 0.8001 }),
      item('noisy 0 dB', 'b', 'p', { stoi: 0.7 }, { tsStoi: 0.6995 }),
      item('noisy 0 dB', 'c', 'p', { stoi: 0.7 }),
    ]);
    expect(x.n).toBe(2);
    expect(x.maxAbs).toBeCloseTo(0.0005, 9);
    expect(x.worst?.system).toBe('b');
    expect(x.meanSigned).toBeCloseTo(-0.0002, 9);
  });

  it('replaces its own section and leaves the others, or inserts it before the first section', () => {
    const doc = '# Title\n\nintro\n\n## A\n\na\n\n## B\n\nb\n';
    const inserted = replaceSection(doc, SECTION, `${SECTION}\n\nv1\n`);
    expect(inserted).toBe(`# Title\n\nintro\n\n${SECTION}\n\nv1\n\n## A\n\na\n\n## B\n\nb\n`);
    const replaced = replaceSection(inserted, SECTION, `${SECTION}\n\nv2\n\n### sub\n\nx\n`);
    expect(replaced).toBe(`# Title\n\nintro\n\n${SECTION}\n\nv2\n\n### sub\n\nx\n\n## A\n\na\n\n## B\n\nb\n`);
    expect(replaceSection('# T\n', SECTION, 'S')).toBe('# T\n\nS\n');
  });

  it('merges a re-measured system into the full record, keeping every other row and both runs\' circumstances', () => {
    const info: RunInfo = { started: 's1', finished: 'f1', machine: 'm', loadBefore: [1, 1, 1], loadAfter: [1, 1, 1], head: 'aaa', dirty: [], modelsDir: 'models', wallSeconds: 1, options: '' };
    const old = { info, items: [item('c', 'unprocessed', 'p', { pesq_wb: 1 }), item('c', 'x', 'p', { pesq_wb: 2 }), item('c', 'y', 'p', { pesq_wb: 3 })] };
    const fresh = { info: { ...info, started: 's2', head: 'bbb' }, items: [item('c', 'unprocessed', 'p', { pesq_wb: 9 }), item('c', 'y', 'p', { pesq_wb: 4 }), item('c', 'y', 'q', { pesq_wb: 5 })] };
    const m = mergeRuns(old, fresh);
    expect(m.items.map((i) => `${i.system}/${i.input}/${i.scores.pesq_wb}`)).toEqual(['unprocessed/p/1', 'x/p/2', 'y/p/4', 'y/q/5']);
    expect(m.info.started).toBe('s1');
    expect(m.info.reruns?.map((r) => `${r.systems.join()}@${r.head}`)).toEqual(['y@bbb']);
  });

  it('checks the scorer\'s output and renders the section from a run record', () => {
    expect(() => ScoredItems.parse([{ file: 'f', input: 'i', condition: 'c', system: 's', scores: { dnsmos_sig: 1 } }])).toThrow();
    const info: RunInfo = { started: 's', finished: 'f', machine: 'm', loadBefore: [1, 1, 1], loadAfter: [2, 2, 2], head: 'abc123 msg', dirty: ['src/x.ts'], modelsDir: 'models', wallSeconds: 60, options: '' };
    const md = renderScores([
      item('noisy 0 dB', 'unprocessed', 'p', { pesq_wb: 1, stoi: 0.6, si_sdr: 0 }),
      item('noisy 0 dB', 'remove_noise', 'p', { pesq_wb: 2, stoi: 0.8, si_sdr: 9 }, { tsStoi: 0.8 }),
      item('noisy 0 dB', 'remove_noise+autoeq', 'p', { pesq_wb: 1.8, stoi: 0.8, si_sdr: 5, dnsmos_ovrl: 2.7 }),
      item(REAL_NOISY_CONDITION, 'unprocessed', 'noisy_no_reference/whisper_jfk.flac', {}),
    ], info);
    expect(md.startsWith(`${SECTION}\n`)).toBe(true);
    expect(md).toContain('+autoeq: PESQ -0.20, STOI +0.000, DNSMOS OVRL +0.20, SI-SDR -4.00 dB');
    expect(md).toContain('| unprocessed | 3.00 | 3.00 | 2.50 | 3.00 | 2.50 |');
    expect(md).toContain('`abc123 msg` when the run started, with 1 paths');
  });
});
