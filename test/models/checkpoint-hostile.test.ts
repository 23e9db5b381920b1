/**
 * Hostile and malformed checkpoint files, made by hand: pickles that ask to run code, to nest or share without end,
 * archives that lie about their entries, storages that point outside the file. Each must fail with a message naming
 * the file, having run nothing.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Opaque, isTensorRef, readCheckpoint } from '../../src/models/checkpoint/index.js';
import { deflated, writeZip, type ZipEntry } from '../helpers/hostile-files.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-checkpoint-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

// Pickle opcodes, as bytes.
const b = (...xs: (number | Buffer | number[])[]): Buffer => Buffer.concat(xs.map((x) => (Buffer.isBuffer(x) ? x : Buffer.from(typeof x === 'number' ? [x] : x))));
const str = (s: string): Buffer => {
  const body = Buffer.from(s, 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32LE(body.length);
  return b(0x58, len, body);
};
const int = (n: number): Buffer => {
  const v = Buffer.alloc(4);
  v.writeInt32LE(n);
  return b(0x4a, v);
};
const global = (module: string, name: string): Buffer => Buffer.from(`c${module}\n${name}\n`, 'latin1');
const PROTO = [0x80, 2];
const STOP = 0x2e;
const MARK = 0x28;
const TUPLE = 0x74;
const TUPLE1 = 0x85;
const REDUCE = 0x52;
const EMPTY_DICT = 0x7d;
const EMPTY_TUPLE = 0x29;
const SETITEM = 0x73;
const tuple = (...items: (number | Buffer)[]): Buffer => b(MARK, ...items, TUPLE);

/** A tensor as torch.save pickles it: _rebuild_tensor_v2(persistent storage, offset, size, stride, False, {}). */
function tensorPickle(o: { type?: string; key?: string; numel: number; offset?: number; size: number[]; stride: number[] }): Buffer {
  const storage = tuple(str('storage'), global('torch', o.type ?? 'FloatStorage'), str(o.key ?? '0'), str('cpu'), int(o.numel));
  return b(
    global('torch._utils', '_rebuild_tensor_v2'),
    tuple(b(storage, 0x51), int(o.offset ?? 0), tuple(...o.size.map(int)), tuple(...o.stride.map(int)), 0x89, global('collections', 'OrderedDict'), EMPTY_TUPLE, REDUCE),
    REDUCE,
  );
}

/** {'w': tensor} as a torch.save ZIP with storages `data` (stored entries, as torch writes them). */
function torchZip(pickleBody: Buffer, storages: Record<string, Buffer> = {}, extra: ZipEntry[] = []): Buffer {
  return writeZip([
    { name: 'archive/data.pkl', data: b(PROTO, pickleBody, STOP) },
    { name: 'archive/byteorder', data: Buffer.from('little') },
    ...Object.entries(storages).map(([k, data]) => ({ name: `archive/data/${k}`, data })),
    ...extra,
  ]);
}
const dictOf = (key: string, value: Buffer): Buffer => b(EMPTY_DICT, str(key), value, SETITEM);

async function file(name: string, bytes: Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}

async function refusal(name: string, bytes: Buffer): Promise<string> {
  const err = await readCheckpoint(await file(name, bytes)).then(
    () => new Error('it was read'),
    (e: unknown) => e as Error,
  );
  expect(err.message.startsWith(`${name} is not a readable PyTorch checkpoint: `), err.message).toBe(true);
  return err.message;
}

const FLOATS = Buffer.from(new Float32Array([1, 2, 3, 4, 5, 6]).buffer);

describe('hostile pickles', () => {
  it('refuses to call os.system, builtins.eval or subprocess, by REDUCE, OBJ or INST, and runs none of them', async () => {
    const marker = join(dir, 'pwned');
    const shell = `touch ${marker}`;
    expect(await refusal('system.pt', torchZip(b(global('os', 'system'), str(shell), TUPLE1, REDUCE)))).toMatch(/asks to call os\.system/);
    expect(await refusal('posix.pt', torchZip(dictOf('state', b(global('posix', 'system'), str(shell), TUPLE1, REDUCE))))).toMatch(/posix\.system/);
    // Protocol 4's STACK_GLOBAL, and Python 2's spelling of builtins.
    const eval4 = b([0x80, 4], [0x8c, 8], Buffer.from('builtins'), [0x8c, 4], Buffer.from('eval'), 0x93, str(`__import__('os').system('${shell}')`), TUPLE1, REDUCE, STOP);
    expect(await refusal('eval.pt', writeZip([{ name: 'a/data.pkl', data: eval4 }]))).toMatch(/builtins\.eval/);
    expect(await refusal('getattr.pt', torchZip(b(global('__builtin__', 'getattr'), tuple(str('x'), str('y')), REDUCE)))).toMatch(/builtins\.getattr/);
    expect(await refusal('popen-obj.pt', torchZip(b(MARK, global('subprocess', 'Popen'), str(shell), 0x6f)))).toMatch(/subprocess\.Popen/);
    expect(await refusal('popen-inst.pt', torchZip(b(MARK, str(shell), Buffer.from('isubprocess\ncheck_call\n', 'latin1'))))).toMatch(/subprocess\.check_call/);
    // A rebuilder that is allowed cannot smuggle a call through its arguments.
    expect(await refusal('nested.pt', torchZip(b(global('torch._tensor', '_rebuild_from_type_v2'), tuple(global('os', 'system'), global('torch', 'Tensor'), tuple(str(shell)), EMPTY_DICT), REDUCE)))).toMatch(/os\.system/);
    expect(existsSync(marker)).toBe(false);
  });

  it('keeps a stored global and a NEWOBJ of any class as inert values', async () => {
    const body = b(EMPTY_DICT, str('klass'), global('os', 'system'), SETITEM, str('obj'), global('subprocess', 'Popen'), EMPTY_TUPLE, 0x81, SETITEM, str('__proto__'), dictOf('polluted', int(1)), SETITEM);
    const ckpt = await readCheckpoint(await file('inert.pt', torchZip(body)));
    const meta = ckpt.meta as Record<string, unknown>;
    expect(meta.klass).toBe('os.system');
    expect(meta.obj).toBeInstanceOf(Opaque);
    expect((meta.obj as Opaque).type).toBe('subprocess.Popen');
    // '__proto__' is only a key: no prototype was set, on this object or any other.
    expect(Object.getPrototypeOf(meta)).toBe(null);
    expect(Object.keys(meta)).toContain('__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('never takes a pickled dict that spells a tensor reference (another file, any offset) for a tensor', async () => {
    const forged = b(EMPTY_DICT, MARK, str('key'), str('w'), str('dtype'), str('float32'), str('shape'), tuple(int(4)), str('file'), str('/etc/passwd'), str('offset'), int(0), str('byteLength'), int(16), 0x75);
    const ckpt = await readCheckpoint(await file('forged.pt', torchZip(dictOf('w', forged))));
    expect(ckpt.tensors.size).toBe(0);
    expect(isTensorRef((ckpt.meta as Record<string, unknown>).w)).toBe(false);
  });

  it('refuses nesting, marks, memo and sharing past their bounds, and values that contain themselves', async () => {
    const n = 5000;
    const deep = b(...Array.from({ length: n }, () => 0x5d), ...Array.from({ length: n - 1 }, () => 0x61));
    expect(await refusal('deep.pt', torchZip(deep))).toMatch(/nests values more than 100 deep/);
    expect(await refusal('marks.pt', torchZip(b(...Array.from({ length: n }, () => MARK))))).toMatch(/nests more than 1000 marks/);
    const puts = Buffer.alloc(5 * ((1 << 20) + 1));
    for (let i = 0; i * 5 < puts.length; i++) {
      puts[i * 5] = 0x72; // LONG_BINPUT i
      puts.writeUInt32LE(i, i * 5 + 1);
    }
    expect(await refusal('memo.pt', torchZip(b(0x4e, puts)))).toMatch(/memo exceeds 1048576 entries/);
    // A tuple of (x, x), forty times over: 2^40 leaves from 100 bytes.
    const laughs = b(0x4e, ...Array.from({ length: 40 }, () => b(0x32, 0x86)));
    expect(await refusal('laughs.pt', torchZip(laughs))).toMatch(/more than 1000000 values/);
    expect(await refusal('cycle.pt', torchZip(b(0x5d, 0x32, 0x61)))).toMatch(/more than 100 deep \(or holds a value that contains itself\)/);
    expect(await refusal('getmemo.pt', torchZip(b(0x68, 7)))).toMatch(/memo entry 7, never stored/);
    expect(await refusal('opcode.pt', torchZip(b(0x49, Buffer.from('1\n'))))).toMatch(/opcode 0x49/);
    expect(await refusal('short.pt', writeZip([{ name: 'a/data.pkl', data: b(PROTO, 0x58, [0xff, 0xff, 0, 0], 0x41) }]))).toMatch(/ends early/);
  });
});

describe('malformed archives and storages', () => {
  const good = (body = tensorPickle({ numel: 6, size: [2, 3], stride: [3, 1] })) => torchZip(dictOf('w', body), { '0': FLOATS });

  it('reads the hand-made archive these tests build on', async () => {
    const ckpt = await readCheckpoint(await file('good.pt', good()));
    expect([...ckpt.tensors.values()].map((t) => [t.key, t.shape])).toEqual([['w', [2, 3]]]);
  });

  it('refuses a truncated archive, a missing or short storage, a tensor past its storage, an unknown dtype', async () => {
    const whole = good();
    expect(await refusal('truncated.pt', whole.subarray(0, whole.length - 30))).toMatch(/no ZIP end-of-central-directory/);
    expect(await refusal('missing.pt', torchZip(dictOf('w', tensorPickle({ key: '9', numel: 6, size: [2, 3], stride: [3, 1] })), { '0': FLOATS }))).toMatch(/storage '9' is not in the archive/);
    expect(await refusal('short-storage.pt', torchZip(dictOf('w', tensorPickle({ numel: 1000, size: [2, 3], stride: [3, 1] })), { '0': FLOATS }))).toMatch(/holds 24 bytes, not 1000 float32/);
    expect(await refusal('past.pt', good(tensorPickle({ numel: 6, offset: 4, size: [2, 3], stride: [3, 1] })))).toMatch(/runs past its storage of 6/);
    expect(await refusal('strided.pt', good(tensorPickle({ numel: 6, size: [3, 2], stride: [1, 3] })))).toMatch(/not contiguous row-major/);
    expect(await refusal('complex.pt', good(tensorPickle({ type: 'ComplexFloatStorage', numel: 3, size: [3], stride: [1] })))).toMatch(/torch\.ComplexFloatStorage is not supported/);
    expect(await refusal('qtensor.pt', torchZip(b(global('torch._utils', '_rebuild_qtensor'), EMPTY_TUPLE, REDUCE)))).toMatch(/quantized/);
    // A directory whose entry claims a gigabyte pickle, then one that claims more bytes than the archive holds.
    const lying = writeZip([{ name: 'archive/data.pkl', data: b(PROTO, 0x4e, STOP), claimedSize: 1 << 30 }]);
    expect(await refusal('lying.pt', lying)).toMatch(/'archive\/data\.pkl' is 1073741824 bytes \(at most 67108864\)/);
    const past = Buffer.from(good());
    const cd = past.readUInt32LE(past.length - 22 + 16);
    past.writeUInt32LE(1 << 20, cd + 20);
    expect(await refusal('past-data.pt', past)).toMatch(/'archive\/data\.pkl' lies outside the archive's data/);
    const bigEndian = writeZip([{ name: 'archive/data.pkl', data: b(PROTO, 0x4e, STOP) }, { name: 'archive/byteorder', data: Buffer.from('big') }]);
    expect(await refusal('big-endian.pt', bigEndian)).toMatch(/its storages are big-endian/);
  });

  it('refuses a compressed (repacked) entry, naming it', async () => {
    const pkl = await deflated(b(PROTO, 0x4e, STOP).toString('latin1'));
    expect(await refusal('deflated.pt', writeZip([{ name: 'archive/data.pkl', deflated: pkl }]))).toMatch(/'archive\/data\.pkl' is compressed \(method 8\)/);
  });

  it('refuses directories that claim more entries than they hold or than a checkpoint has', async () => {
    const zip = good();
    const eocd = zip.length - 22;
    const many = Buffer.from(zip);
    many.writeUInt16LE(0xfffe, eocd + 8);
    many.writeUInt16LE(0xfffe, eocd + 10);
    expect(await refusal('many.pt', many)).toMatch(/cannot hold 65534 entries/);
    expect(await refusal('zip64-many.pt', zip64(zip, 10_000_000_000))).toMatch(/declares 10000000000 entries/);
    expect(await refusal('not-torch.pt', writeZip([{ name: 'readme.txt', data: Buffer.from('hi') }]))).toMatch(/without a torch data\.pkl/);
    expect(await refusal('two.pt', writeZip([{ name: 'a/data.pkl', data: Buffer.from([0x4e, STOP]) }, { name: 'b/data.pkl', data: Buffer.from([0x4e, STOP]) }]))).toMatch(/more than one data\.pkl/);
  });

  it('reads ZIP64 entries whose offsets and sizes are in the extra field', async () => {
    const ckpt = await readCheckpoint(await file('zip64.pt', zip64(good())));
    const w = ckpt.tensors.get('w')!;
    const bytes = await readFile(join(dir, 'zip64.pt'));
    expect(new Float32Array(Uint8Array.from(bytes.subarray(w.offset, w.offset + w.byteLength)).buffer)).toEqual(new Float32Array([1, 2, 3, 4, 5, 6]));
  });

  it('refuses a legacy file cut short, and a file of neither format', async () => {
    const legacy = await readFile(join(import.meta.dirname, '..', 'fixtures', 'golden', 'checkpoints', 'legacy.pt'));
    expect(await refusal('legacy-cut.pt', legacy.subarray(0, legacy.length - 10))).toMatch(/past the end of the file/);
    expect(await refusal('legacy-head.pt', legacy.subarray(0, 40))).toMatch(/ends early/);
    const other = await readCheckpoint(await file('random.bin', Buffer.from('hello, not a model'))).catch((e: Error) => e.message);
    expect(other).toMatch(/^random\.bin is not a valid safetensors file/);
  });
});

/**
 * The archive rewritten with ZIP64 central entries (sizes and offsets saturated, the real values in the 0x0001 extra
 * field) and ZIP64 end records, as torch's writer does for large files; `entries` overrides the declared count.
 */
function zip64(zip: Buffer, entries?: number): Buffer {
  const eocd = zip.length - 22;
  const count = zip.readUInt16LE(eocd + 10);
  const cdOffset = zip.readUInt32LE(eocd + 16);
  const centrals: Buffer[] = [];
  let p = cdOffset;
  for (let i = 0; i < count; i++) {
    const nameLength = zip.readUInt16LE(p + 28);
    const head = Buffer.from(zip.subarray(p, p + 46));
    const name = zip.subarray(p + 46, p + 46 + nameLength);
    const extra = Buffer.alloc(4 + 24);
    extra.writeUInt16LE(0x0001, 0);
    extra.writeUInt16LE(24, 2);
    extra.writeBigUInt64LE(BigInt(head.readUInt32LE(24)), 4);
    extra.writeBigUInt64LE(BigInt(head.readUInt32LE(20)), 12);
    extra.writeBigUInt64LE(BigInt(head.readUInt32LE(42)), 20);
    head.writeUInt32LE(0xffffffff, 20);
    head.writeUInt32LE(0xffffffff, 24);
    head.writeUInt32LE(0xffffffff, 42);
    head.writeUInt16LE(extra.length, 30);
    centrals.push(head, name, extra);
    p += 46 + nameLength;
  }
  const cd = Buffer.concat(centrals);
  const record = Buffer.alloc(56);
  record.writeUInt32LE(0x06064b50, 0);
  record.writeBigUInt64LE(44n, 4);
  record.writeBigUInt64LE(BigInt(entries ?? count), 24);
  record.writeBigUInt64LE(BigInt(entries ?? count), 32);
  record.writeBigUInt64LE(BigInt(cd.length), 40);
  record.writeBigUInt64LE(BigInt(cdOffset), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(cdOffset + cd.length), 8);
  locator.writeUInt32LE(1, 16);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(0xffff, 8);
  end.writeUInt16LE(0xffff, 10);
  end.writeUInt32LE(0xffffffff, 12);
  end.writeUInt32LE(0xffffffff, 16);
  return Buffer.concat([zip.subarray(0, cdOffset), cd, record, locator, end]);
}
