/**
 * PyTorch checkpoint reader (torch.save): the ZIP format of PyTorch 1.6+ (`<archive>/data.pkl`, a pickle whose
 * tensors point by persistent id at raw little-endian storages `<archive>/data/<key>`, stored uncompressed), and the
 * legacy format before it (pickles in a row, then each storage as an 8-byte element count and its bytes). Only the
 * pickle is read; every tensor becomes a byte range of the file. The unpickler (pickle.ts) runs no code and knows
 * torch's tensor rebuilders itself; a tensor that is not contiguous and row-major, a quantized or sparse tensor, or a
 * storage that does not fit its entry is refused, naming the file.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { Native, PickleError, PickleTruncated, PyGlobal, PyTuple, toPlain, unpickle, type PickleHooks, type PyValue } from './pickle.js';
import { DTYPE_BYTES, Opaque, isTensorRef, type Checkpoint, type CheckpointDType, type PlainValue, type TensorRef } from './types.js';
import { ZipFormatError, readStoredEntry, readZipDirectory, storedDataOffset, type ZipDirectory } from './zip.js';

/** The 53-stem RoFormer's pickle is well under a megabyte; a pickle this large is not a state dict. */
const MAX_PICKLE_BYTES = 64 * 1024 * 1024;
const MAX_DIMS = 16;
const LEGACY_MAGIC = 0x1950a86a20f9469cfc6cn;
const LEGACY_PROTOCOL = 1001;

const STORAGE_DTYPES: Readonly<Record<string, CheckpointDType>> = {
  FloatStorage: 'float32', HalfStorage: 'float16', BFloat16Storage: 'bfloat16', DoubleStorage: 'float64', LongStorage: 'int64',
  IntStorage: 'int32', ShortStorage: 'int16', CharStorage: 'int8', ByteStorage: 'uint8', BoolStorage: 'bool', UntypedStorage: 'uint8',
};

/** Keys under which known checkpoint layouts keep the state dict: Lightning, a demucs package, common trainers. */
const STATE_DICT_KEYS = ['state_dict', 'state', 'model_state_dict', 'model'];

class Refused extends Error {}
function fail(why: string): never {
  throw new Refused(why);
}

interface Storage {
  readonly dtype: CheckpointDType;
  readonly numel: number;
  /** Absolute offset of element 0 in the file. */
  readonly offset: number;
}

type TensorSpec = Omit<TensorRef, 'key'>;

class StorageValue extends Native {
  constructor(readonly storage: Storage) {
    super(storage, () => new Opaque(`torch storage (${storage.dtype})`));
  }
}

class TensorValue extends Native {
  constructor(readonly spec: TensorSpec) {
    super(spec, (key) => ({ key, ...spec }));
  }
}

function isInt(v: PyValue): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v);
}

function intTuple(v: PyValue | undefined, what: string): number[] {
  const items = v instanceof PyTuple ? v.items : Array.isArray(v) ? v : fail(`a tensor's ${what} is not a tuple`);
  if (items.length > MAX_DIMS) fail(`a tensor has ${items.length} dimensions`);
  return items.map((x) => (isInt(x) && x >= 0 ? x : fail(`a tensor's ${what} holds ${String(x)}`)));
}

function storageDtype(type: PyValue): CheckpointDType {
  if (!(type instanceof PyGlobal) || type.module !== 'torch') return fail(`a storage has type ${type instanceof PyGlobal ? type.qualified : 'unknown'}`);
  return STORAGE_DTYPES[type.name] ?? fail(`storage type torch.${type.name} is not supported`);
}

/** torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, ...) as a byte range. */
function rebuildTensor(file: string, args: readonly PyValue[]): TensorValue {
  const storage = args[0] instanceof StorageValue ? args[0].storage : fail('a tensor is rebuilt from something that is not a storage');
  const storageOffset = isInt(args[1] ?? null) && (args[1] as number) >= 0 ? (args[1] as number) : fail('a tensor has a malformed storage offset');
  const shape = intTuple(args[2], 'size');
  const stride = intTuple(args[3], 'stride');
  if (stride.length !== shape.length) fail(`a tensor has ${shape.length} sizes but ${stride.length} strides`);
  const numel = shape.reduce((a, b) => a * b, 1);
  if (numel > 0) {
    let expected = 1;
    for (let d = shape.length - 1; d >= 0; d--) {
      // A dimension of size 1 is never stepped along, so its stride is free.
      if (shape[d] !== 1 && stride[d] !== expected) {
        fail(`a tensor of shape [${shape.join(', ')}] has strides [${stride.join(', ')}], not contiguous row-major (save it after .contiguous())`);
      }
      expected *= shape[d]!;
    }
    if (storageOffset + numel > storage.numel) fail(`a tensor of ${numel} elements at offset ${storageOffset} runs past its storage of ${storage.numel}`);
  }
  const size = DTYPE_BYTES[storage.dtype];
  return new TensorValue({ dtype: storage.dtype, shape, file, offset: storage.offset + storageOffset * size, byteLength: numel * size });
}

function isTensor(v: PyValue | undefined): v is TensorValue {
  return v instanceof TensorValue;
}

/** torch's own rebuilders and value types, reimplemented; any other torch call is refused by the unpickler. */
function torchCall(file: string, fn: PyGlobal, args: readonly PyValue[]): PyValue | undefined {
  switch (fn.qualified) {
    case 'torch._utils._rebuild_tensor':
    case 'torch._utils._rebuild_tensor_v2':
      return rebuildTensor(file, args);
    case 'torch._utils._rebuild_parameter':
    case 'torch._utils._rebuild_parameter_with_state':
      return isTensor(args[0]) ? args[0] : fail('a parameter wraps something that is not a tensor');
    // A tensor subclass (nn.Parameter in some versions): the inner rebuild, then the type, which changes no bytes.
    case 'torch._tensor._rebuild_from_type_v2': {
      const [inner, , innerArgs] = args;
      if (!(inner instanceof PyGlobal) || !(innerArgs instanceof PyTuple)) return fail('a tensor subclass has a malformed rebuild');
      const t = torchCall(file, inner, innerArgs.items);
      return isTensor(t ?? undefined) ? t : fail(`a tensor subclass is rebuilt by ${inner.qualified}`);
    }
    case 'torch.Size':
      return intTuple(args[0], 'size');
    case 'torch.device':
      if (typeof args[0] === 'string' && (args.length === 1 || isInt(args[1] ?? null))) return args.length === 1 ? args[0] : `${args[0]}:${String(args[1])}`;
      return fail('torch.device called with unexpected arguments');
    case 'torch._utils._rebuild_qtensor':
      return fail('it holds quantized tensors, which are not supported');
    case 'torch._utils._rebuild_sparse_tensor':
    case 'torch._utils._rebuild_sparse_csr_tensor':
      return fail('it holds sparse tensors, which are not supported');
    default:
      return undefined;
  }
}

/** The persistent id of a storage: ('storage', type, key, location, numel[, view_metadata]). */
function storageRef(pid: PyValue): { dtype: CheckpointDType; key: string; numel: number } {
  const items = pid instanceof PyTuple ? pid.items : fail('a persistent id is not a tuple');
  const [tag, type, key, , numel, view] = items;
  if (tag !== 'storage' || typeof key !== 'string' || !isInt(numel ?? null) || (numel as number) < 0) fail('a persistent id is not a storage reference');
  if (items.length > 5 && view !== null) fail('it holds legacy storage views, which are not supported');
  return { dtype: storageDtype(type ?? null), key, numel: numel as number };
}

function hooks(file: string, storage: (pid: PyValue) => Storage): PickleHooks {
  return { persistentLoad: (pid) => new StorageValue(storage(pid)), call: (fn, args) => torchCall(file, fn, args) };
}

async function readZipPickle(fh: FileHandle, file: string, size: number): Promise<PyValue> {
  const dir: ZipDirectory = await readZipDirectory(fh, size);
  const pickles = [...dir.entries.keys()].filter((n) => /^[^/]+\/data\.pkl$/.test(n));
  if (pickles.length !== 1) fail(pickles.length === 0 ? 'it is a ZIP archive without a torch data.pkl' : 'it holds more than one data.pkl');
  const prefix = pickles[0]!.slice(0, -'data.pkl'.length);
  const byteorder = dir.entries.get(`${prefix}byteorder`);
  if (byteorder) {
    const order = (await readStoredEntry(fh, dir, byteorder, 16)).toString('latin1');
    if (order !== 'little') fail(`its storages are ${order}-endian`);
  }
  const pickle = await readStoredEntry(fh, dir, dir.entries.get(pickles[0]!)!, MAX_PICKLE_BYTES);
  // Data offsets need each storage's local header, an async read: found before the (synchronous) unpickling.
  const offsets = new Map<string, { offset: number; size: number }>();
  const dataPrefix = `${prefix}data/`;
  for (const [name, entry] of dir.entries) {
    if (name.startsWith(dataPrefix)) offsets.set(name.slice(dataPrefix.length), { offset: await storedDataOffset(fh, dir, entry), size: entry.size });
  }
  const { value } = unpickle(
    pickle,
    0,
    hooks(file, (pid) => {
      const { dtype, key, numel } = storageRef(pid);
      const at = offsets.get(key) ?? fail(`a tensor's storage '${key}' is not in the archive`);
      if (at.size !== numel * DTYPE_BYTES[dtype]) fail(`storage '${key}' holds ${at.size} bytes, not ${numel} ${dtype} elements`);
      return { dtype, numel, offset: at.offset };
    }),
  );
  return value;
}

async function readLegacyPickle(fh: FileHandle, file: string, size: number): Promise<PyValue> {
  // The pickles come first and the storages after them, so read a window of the file, larger only if needed.
  for (let window = 1 << 20; ; window *= 8) {
    const length = Math.min(size, window, MAX_PICKLE_BYTES);
    const buf = Buffer.alloc(length);
    await fh.read(buf, 0, length, 0);
    try {
      return await parseLegacy(fh, file, size, buf);
    } catch (err) {
      if (!(err instanceof PickleTruncated) || length === size || length === MAX_PICKLE_BYTES) throw err;
    }
  }
}

async function parseLegacy(fh: FileHandle, file: string, size: number, buf: Buffer): Promise<PyValue> {
  const inert: PickleHooks = { persistentLoad: () => fail('a legacy header holds a storage') };
  const magic = unpickle(buf, 0, inert);
  if (magic.value !== LEGACY_MAGIC) fail('it is neither a ZIP archive nor a legacy torch.save file');
  const protocol = unpickle(buf, magic.end, inert);
  if (protocol.value !== LEGACY_PROTOCOL) fail(`its legacy protocol version is ${String(protocol.value)}`);
  const sysInfo = unpickle(buf, protocol.end, inert);
  const info = toPlain(sysInfo.value) as Record<string, PlainValue> | null;
  if (info?.little_endian !== true) fail('its storages are not little-endian');
  // First pass: which storages the main pickle references, with their dtype and size.
  const seen = new Map<string, { dtype: CheckpointDType; numel: number }>();
  const first = unpickle(buf, sysInfo.end, {
    persistentLoad: (pid) => {
      const { dtype, key, numel } = storageRef(pid);
      const prior = seen.get(key);
      if (prior && (prior.dtype !== dtype || prior.numel !== numel)) fail(`storage '${key}' is referenced with two types`);
      seen.set(key, { dtype, numel });
      return new StorageValue({ dtype, numel, offset: 0 });
    },
    call: (fn, args) => torchCall(file, fn, args),
  });
  const keyList = unpickle(buf, first.end, inert);
  const keys = Array.isArray(keyList.value) ? keyList.value : fail('its storage key list is not a list');
  // Then the storages, in that order, each an int64 element count and the elements.
  const offsets = new Map<string, Storage>();
  let p = keyList.end;
  const count = Buffer.alloc(8);
  for (const listed of keys) {
    const key = typeof listed === 'string' ? listed : fail('its storage key list holds a non-string');
    const ref = seen.get(key) ?? fail(`storage '${key}' is listed but never used, so its size is unknown`);
    if (p + 8 > size) fail(`storage '${key}' lies past the end of the file (truncated?)`);
    await fh.read(count, 0, 8, p);
    if (count.readBigInt64LE(0) !== BigInt(ref.numel)) fail(`storage '${key}' holds ${count.readBigInt64LE(0)} elements, not ${ref.numel}`);
    offsets.set(key, { dtype: ref.dtype, numel: ref.numel, offset: p + 8 });
    p += 8 + ref.numel * DTYPE_BYTES[ref.dtype];
    if (p > size) fail(`storage '${key}' runs past the end of the file (truncated?)`);
  }
  // Second pass, now that every storage's place is known.
  return unpickle(buf, sysInfo.end, hooks(file, (pid) => offsets.get(storageRef(pid).key) ?? fail('a storage is not in the file\'s list'))).value;
}

function isDict(v: PlainValue | undefined): v is { readonly [key: string]: PlainValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Opaque) && !isTensorRef(v);
}

function hasTensor(d: { readonly [key: string]: PlainValue }): boolean {
  return Object.values(d).some((v) => isTensorRef(v) || (isDict(v) && hasTensor(v)));
}

/**
 * The state dict: under a known key when one holds tensors, else the root; nested dicts flattened with dots. Its
 * TensorRefs in `meta` are replaced by the same objects as in the map, keyed relative to the state dict, so a reader
 * of either sees one key per tensor.
 */
function collectTensors(root: PlainValue, file: string): Map<string, TensorRef> {
  const tensors = new Map<string, TensorRef>();
  if (isTensorRef(root)) return tensors.set('', root);
  if (!isDict(root)) return tensors;
  const under = STATE_DICT_KEYS.map((k) => root[k]).find((v) => isDict(v) && hasTensor(v));
  const walk = (d: Record<string, PlainValue>, prefix: string): void => {
    for (const [k, v] of Object.entries(d)) {
      if (isTensorRef(v) && v.file === file) {
        const ref: TensorRef = { ...v, key: prefix + k };
        d[k] = ref;
        tensors.set(ref.key, ref);
      } else if (isDict(v)) walk(v as Record<string, PlainValue>, `${prefix}${k}.`);
    }
  };
  // toPlain made these objects for this reader alone: rewriting them in place is safe.
  walk((isDict(under) ? under : root) as Record<string, PlainValue>, '');
  return tensors;
}

/**
 * Reads a torch.save file. `tensors` is its state dict (see STATE_DICT_KEYS: a demucs package's `state`, a Lightning
 * checkpoint's `state_dict`, else the root); `meta` the whole unpickled root, where a state-dict tensor's `key` is its
 * state-dict key and any other tensor's its dotted path from the root (`optimizer_states.0.state.0.exp_avg`).
 */
export async function readTorchCheckpoint(path: string): Promise<Checkpoint> {
  const file = resolve(path);
  const name = basename(file);
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    const head = Buffer.alloc(4);
    await fh.read(head, 0, 4, 0);
    const zip = head.readUInt32LE(0) === 0x04034b50;
    const root = zip ? await readZipPickle(fh, file, size) : await readLegacyPickle(fh, file, size);
    const meta = toPlain(root);
    return { file, format: zip ? 'torch-zip' : 'torch-legacy', tensors: collectTensors(meta, file), meta };
  } catch (err) {
    if (err instanceof Refused || err instanceof PickleError || err instanceof ZipFormatError) {
      throw new Error(`${name} is not a readable PyTorch checkpoint: ${err.message}`);
    }
    throw err;
  } finally {
    await fh.close();
  }
}
