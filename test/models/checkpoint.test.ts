/**
 * Reading the authors' checkpoint files: the files of harness/cases/checkpoints.py, written by torch.save and
 * safetensors themselves (test/fixtures/golden/checkpoints/), read back through byte ranges into them. Hostile and
 * malformed files are in checkpoint-hostile.test.ts.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Opaque, isTensorRef, readCheckpoint, readTensorData, stateDict, type PlainValue, type TensorRef } from '../../src/models/checkpoint/index.js';
import { compareCase, readCheckpointCase } from '../engines/reference/checkpoints.js';

const DIR = join(import.meta.dirname, '..', 'fixtures', 'golden', 'checkpoints');

/** A value at a dotted path of a checkpoint's meta (dict keys only). */
function at(meta: PlainValue, path: string): PlainValue | undefined {
  let v: PlainValue | undefined = meta;
  for (const k of path.split('/')) {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Opaque || isTensorRef(v)) return undefined;
    v = (v as { readonly [key: string]: PlainValue })[k];
  }
  return v;
}

function tensor(map: ReadonlyMap<string, TensorRef>, key: string): TensorRef {
  const t = map.get(key);
  if (!t) throw new Error(`no tensor ${key}`);
  return t;
}

describe('checkpoints written by torch.save and safetensors', () => {
  it('gives every tensor the key, dtype and shape torch wrote, and its exact values through its byte range', async () => {
    const spec = await readCheckpointCase(DIR);
    const rows = await compareCase(DIR);
    expect(rows.map((r) => r.name).sort()).toEqual([...Object.keys(spec.files), ...spec.refused.map((r) => `${r.file} (refused)`)].sort());
    for (const row of rows) expect(row, row.name).toMatchObject({ maxAbs: 0, rel: 0 });
    // The comparison is not vacuous: the golden values are not all zero.
    const plain = await readCheckpoint(join(DIR, 'plain.pt'));
    expect(Math.max(...(await readTensorData(tensor(plain.tensors, 'f32'))).map(Math.abs))).toBeGreaterThan(0.1);
  });

  it('points views of one storage at their offsets in the same bytes (ZIP and legacy formats)', async () => {
    const plain = await readCheckpoint(join(DIR, 'plain.pt'));
    const whole = tensor(plain.tensors, 'view.whole');
    expect(tensor(plain.tensors, 'view.middle')).toMatchObject({ offset: whole.offset + 2 * 4, byteLength: 6 * 4, shape: [2, 3] });
    expect(tensor(plain.tensors, 'view.tail')).toMatchObject({ offset: whole.offset + 14 * 4, byteLength: 4 * 4 });
    // torch.save pads each storage to a 64-byte boundary (through the local header's extra field).
    expect(whole.offset % 64).toBe(0);
    const legacy = await readCheckpoint(join(DIR, 'legacy.pt'));
    expect(legacy.format).toBe('torch-legacy');
    expect(tensor(legacy.tensors, 'view').offset).toBe(tensor(legacy.tensors, 'base').offset + 3 * 4);
    expect([...(await readTensorData(tensor(legacy.tensors, 'view')))]).toEqual([0.75, 1, 1.25, 1.5, 1.75, 2]);
  });

  it("reads a demucs package: klass as a name, kwargs with the Fraction as a number, fp16 state, inert training_args", async () => {
    const ckpt = await readCheckpoint(join(DIR, 'demucs.th'));
    expect(at(ckpt.meta, 'klass')).toBe('demucs.htdemucs.HTDemucs');
    expect(at(ckpt.meta, 'kwargs/segment')).toBeCloseTo(7.8, 12);
    expect(at(ckpt.meta, 'kwargs/sources')).toEqual(['drums', 'bass', 'other', 'vocals']);
    expect(at(ckpt.meta, 'args')).toEqual([]);
    expect(at(ckpt.meta, 'training_args/optim/lr')).toBe(3e-4);
    const cfg = at(ckpt.meta, 'training_args/inert/cfg');
    expect(cfg).toBeInstanceOf(Opaque);
    expect((cfg as Opaque).type).toBe('omegaconf.dictconfig.DictConfig');
    expect((at(ckpt.meta, 'training_args/inert/ns') as Opaque).type).toBe('argparse.Namespace');
    expect(at(ckpt.meta, 'training_args/inert/path')).toBe('/data/musdb');
    expect((at(ckpt.meta, 'training_args/inert/when') as Opaque).type).toBe('datetime.datetime');
    expect(at(ckpt.meta, 'training_args/inert/counts')).toEqual({ drums: 2 });
    expect((at(ckpt.meta, 'training_args/inert/blob') as Opaque).type).toBe('bytes');
    expect(Object.isFrozen(cfg)).toBe(true);
    // The state dict is the package's `state`; meta holds the same TensorRefs there.
    expect([...ckpt.tensors.values()].every((t) => t.dtype === 'float16')).toBe(true);
    const first = [...ckpt.tensors.values()][0]!;
    expect(first.key).toBe('encoder.0.conv.weight');
    expect(at(ckpt.meta, `state/${first.key}`)).toBe(first);
  });

  it('reads a Lightning checkpoint: its state_dict, under a prefix, with int-keyed optimizer state and inert extras', async () => {
    const ckpt = await readCheckpoint(join(DIR, 'lightning.ckpt'));
    expect(at(ckpt.meta, 'epoch')).toBe(3);
    expect([...ckpt.tensors.keys()]).toEqual(['model.band_split.0.weight', 'model.band_split.0.bias', 'model.freq_indices']);
    const net = stateDict(ckpt, 'model.');
    expect([...net.keys()]).toEqual(['band_split.0.weight', 'band_split.0.bias', 'freq_indices']);
    expect([...(await readTensorData(tensor(net, 'freq_indices')))]).toEqual([0, 1, 1, 2, 3, 5]);
    expect(() => stateDict(ckpt, 'missing.')).toThrow(/lightning\.ckpt has no tensors under 'missing\.'/);
    const opt = (at(ckpt.meta, 'optimizer_states') as PlainValue[])[0]!;
    expect(at(opt, 'state/0/exp_avg')).toMatchObject({ key: 'optimizer_states.0.state.0.exp_avg', dtype: 'float32', shape: [4, 6] });
    expect(at(opt, 'param_groups')).toEqual([{ lr: 1e-3, betas: [0.9, 0.999], params: [0, 1, 2] }]);
    expect((at(ckpt.meta, "callbacks/ModelCheckpoint{'monitor': 'sdr'}/last_score") as Opaque).type).toBe('numpy scalar');
    expect((at(ckpt.meta, 'hyper_parameters') as Opaque).type).toBe('omegaconf.dictconfig.DictConfig');
  });

  it('reads pickle protocol 4 (frames, memoize, stack globals) like protocol 2', async () => {
    const p2 = await readCheckpoint(join(DIR, 'plain.pt'));
    const p4 = await readCheckpoint(join(DIR, 'protocol4.pt'));
    const strip = (c: typeof p2) => [...c.tensors.values()].map(({ key, dtype, shape, byteLength }) => ({ key, dtype, shape, byteLength }));
    expect(strip(p4)).toEqual(strip(p2));
  });

  it('reads safetensors through the same entry point, with its metadata', async () => {
    const ckpt = await readCheckpoint(join(DIR, 'weights.safetensors'));
    expect(ckpt.format).toBe('safetensors');
    expect(ckpt.meta).toEqual({ format: 'pt', note: 'checkpoint case' });
  });

  it('reads small tensors of every dtype as float32 values', async () => {
    const ckpt = await readCheckpoint(join(DIR, 'plain.pt'));
    const values = async (key: string) => [...(await readTensorData(tensor(ckpt.tensors, key)))];
    expect(await values('i64')).toEqual([0, 5, 9, -3, 2 ** 40, 7]);
    expect(await values('i32')).toEqual([1, -2, 3]);
    expect(await values('u8')).toEqual([0, 128, 255]);
    expect(await values('bool')).toEqual([1, 0, 1]);
    expect(await values('scalar')).toEqual([3.5]);
    expect(await values('empty')).toEqual([]);
    expect(tensor(ckpt.tensors, 'scalar').shape).toEqual([]);
    await expect(readTensorData(tensor(ckpt.tensors, 'f32'), 4)).rejects.toThrow(/plain\.pt: tensor 'f32' has 12 elements, more than 4/);
  });
});
