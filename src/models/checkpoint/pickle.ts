/**
 * A restricted unpickler for checkpoint files. Python's pickle is a small stack machine whose GLOBAL and REDUCE
 * opcodes import and call anything; this one imports and calls nothing. It knows the opcodes torch.save emits
 * (protocols 2 to 5) and builds plain values; a call (REDUCE, OBJ, INST) is honoured only for an allow-list of
 * globals whose meaning it reimplements (pickle-calls.ts: an OrderedDict, a Fraction, a set, a path; and what the
 * caller's hooks know: torch's tensor rebuilders), and any other call refuses the whole file, naming the global: that
 * is how hostile pickles (os.system, builtins.eval, subprocess.Popen via GLOBAL + REDUCE) work. The list is a superset
 * of what torch.load(weights_only=True), torch's own safe loader and its default since 2.6, accepts.
 *
 * Two things are kept, inertly, instead of refused, so that a file still loads when a key Soundry never reads holds
 * someone's class (demucs' `training_args`, Lightning's hyper-parameters, an omegaconf DictConfig):
 * - a global that is only stored, never called (demucs' `klass`, a torch dtype) is a name and becomes the string
 *   'module.qualname';
 * - an object the file asks to create without a call (NEWOBJ, cls.__new__) becomes an Opaque marker naming its class,
 *   which swallows the items and state that follow (BUILD, SETITEMS, APPENDS) and can be used for nothing else.
 * Every bound (pickle size, memo, stack, marks, nesting depth, values) is checked, and the output is a tree: cycles
 * (through the depth bound) and exponential sharing (a "billion laughs" through the memo) are refused when the
 * result is converted.
 */
import { Opaque, type PlainValue } from './types.js';
import { genericCall } from './pickle-calls.js';
import { Native, PickleTruncated, PyBytes, PyDict, PyGlobal, PyTuple, fail, type PyValue } from './pickle-values.js';

export { Native, PickleError, PickleTruncated, PyBytes, PyDict, PyGlobal, PyTuple, type PyValue } from './pickle-values.js';

export interface PickleHooks {
  /** BINPERSID: torch's storage references. */
  persistentLoad(pid: PyValue): PyValue;
  /** A call the file asks for: the hook's value, or undefined when the hook does not know `fn`. */
  call?(fn: PyGlobal, args: readonly PyValue[]): PyValue | undefined;
}

export interface PickleLimits {
  maxMemo: number;
  maxStack: number;
  maxMarkDepth: number;
  maxDepth: number;
  maxValues: number;
}

export const DEFAULT_LIMITS: PickleLimits = { maxMemo: 1 << 20, maxStack: 1 << 22, maxMarkDepth: 1000, maxDepth: 100, maxValues: 1_000_000 };

/** Python 2 spellings that protocol 2 writes for Python 3 modules. */
const MODULE_ALIASES: Readonly<Record<string, string>> = { __builtin__: 'builtins', copy_reg: 'copyreg' };

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_.]{0,255}$/;

/** Reads one pickle starting at `start`; returns its value and the offset just past its STOP. */
export function unpickle(buf: Uint8Array, start: number, hooks: PickleHooks, limits: PickleLimits = DEFAULT_LIMITS): { value: PyValue; end: number } {
  const data = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const memo = new Map<number, PyValue>();
  let stack: PyValue[] = [];
  const marks: PyValue[][] = [];
  let p = start;

  const need = (n: number): number => {
    if (n < 0) fail(`its pickle has a negative length at byte ${p}`);
    if (p + n > data.length) throw new PickleTruncated(`its pickle ends early at byte ${p} (truncated?)`);
    const at = p;
    p += n;
    return at;
  };
  const push = (v: PyValue): void => {
    if (stack.length >= limits.maxStack) fail(`its pickle stack exceeds ${limits.maxStack} values`);
    stack.push(v);
  };
  const pop = (): PyValue => {
    if (stack.length === 0) fail(`its pickle pops an empty stack at byte ${p - 1}`);
    return stack.pop()!;
  };
  const top = (): PyValue => {
    if (stack.length === 0) fail(`its pickle reads an empty stack at byte ${p - 1}`);
    return stack[stack.length - 1]!;
  };
  const popMark = (): PyValue[] => {
    const items = stack;
    const prev = marks.pop();
    if (!prev) fail(`its pickle has no MARK to close at byte ${p - 1}`);
    stack = prev;
    return items;
  };
  const memoPut = (index: number): void => {
    if (!memo.has(index) && memo.size >= limits.maxMemo) fail(`its pickle memo exceeds ${limits.maxMemo} entries`);
    memo.set(index, top());
  };
  const memoGet = (index: number): void => {
    if (!memo.has(index)) fail(`its pickle reads memo entry ${index}, never stored`);
    push(memo.get(index)!);
  };
  const text = (n: number): string => {
    const at = need(n);
    return data.toString('utf8', at, at + n);
  };
  const bytes = (n: number): PyBytes => {
    const at = need(n);
    return new PyBytes(Uint8Array.prototype.slice.call(data, at, at + n));
  };
  const length64 = (): number => {
    const at = need(8);
    const n = data.readBigUInt64LE(at);
    if (n > BigInt(data.length)) fail(`its pickle declares a ${n}-byte value`);
    return Number(n);
  };
  const line = (): string => {
    const nl = data.indexOf(0x0a, p);
    if (nl < 0 && data.length - p <= 256) throw new PickleTruncated(`its pickle ends early at byte ${p} (truncated?)`);
    if (nl < 0 || nl - p > 256) fail(`its pickle has a malformed GLOBAL at byte ${p}`);
    const s = data.toString('latin1', p, nl);
    p = nl + 1;
    return s;
  };
  const global = (module: string, name: string): PyGlobal => {
    if (!IDENTIFIER.test(module) || !IDENTIFIER.test(name)) fail(`its pickle names a malformed global '${module}.${name}'`);
    return new PyGlobal(MODULE_ALIASES[module] ?? module, name);
  };
  const call = (fn: PyValue, args: readonly PyValue[]): PyValue => {
    if (!(fn instanceof PyGlobal)) return fail('its pickle calls something that is not a global');
    const v = hooks.call?.(fn, args) ?? genericCall(fn, args);
    if (v === undefined) {
      fail(`it asks to call ${fn.qualified}, which is not a tensor, dict, list or plain value (Soundry never runs code from a checkpoint)`);
    }
    return v;
  };
  const setItems = (target: PyValue, items: readonly PyValue[]): void => {
    if (items.length % 2 !== 0) fail('its pickle sets a key without a value');
    if (target instanceof Opaque) return;
    if (!(target instanceof PyDict)) fail('its pickle sets items on something that is not a dict');
    for (let i = 0; i < items.length; i += 2) target.entries.set(items[i]!, items[i + 1]!);
  };
  const appendItems = (target: PyValue, items: readonly PyValue[]): void => {
    if (target instanceof Opaque) return;
    if (!Array.isArray(target)) fail('its pickle appends to something that is not a list');
    for (const v of items) target.push(v);
  };

  for (;;) {
    const op = data[need(1)]!;
    switch (op) {
      case 0x80: need(1); break; // PROTO
      case 0x95: need(8); break; // FRAME: a length hint only
      case 0x2e: { // STOP
        if (marks.length > 0) fail('its pickle stops inside a MARK');
        const value = pop();
        return { value, end: p };
      }
      case 0x28: // MARK
        if (marks.length >= limits.maxMarkDepth) fail(`its pickle nests more than ${limits.maxMarkDepth} marks`);
        marks.push(stack);
        stack = [];
        break;
      case 0x30: pop(); break; // POP
      case 0x31: popMark(); break; // POP_MARK
      case 0x32: push(top()); break; // DUP
      case 0x4e: push(null); break;
      case 0x88: push(true); break;
      case 0x89: push(false); break;
      case 0x4a: push(data.readInt32LE(need(4))); break; // BININT
      case 0x4b: push(data[need(1)]!); break; // BININT1
      case 0x4d: push(data.readUInt16LE(need(2))); break; // BININT2
      case 0x8a: case 0x8b: { // LONG1, LONG4: little-endian two's complement
        const n = op === 0x8a ? data[need(1)]! : data.readInt32LE(need(4));
        if (n > 1024) fail(`its pickle has a ${n}-byte integer`);
        const at = need(n);
        let v = 0n;
        for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(data[at + i]!);
        if (n > 0 && data[at + n - 1]! >= 0x80) v -= 1n << BigInt(8 * n);
        push(v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v);
        break;
      }
      case 0x47: push(data.readDoubleBE(need(8))); break; // BINFLOAT
      case 0x58: push(text(data.readUInt32LE(need(4)))); break; // BINUNICODE
      case 0x8c: push(text(data[need(1)]!)); break; // SHORT_BINUNICODE
      case 0x8d: push(text(length64())); break; // BINUNICODE8
      case 0x54: { // BINSTRING (a Python 2 str)
        const n = data.readInt32LE(need(4));
        const at = need(n);
        push(data.toString('latin1', at, at + n));
        break;
      }
      case 0x55: { // SHORT_BINSTRING
        const n = data[need(1)]!;
        const at = need(n);
        push(data.toString('latin1', at, at + n));
        break;
      }
      case 0x42: push(bytes(data.readUInt32LE(need(4)))); break; // BINBYTES
      case 0x43: push(bytes(data[need(1)]!)); break; // SHORT_BINBYTES
      case 0x8e: case 0x96: push(bytes(length64())); break; // BINBYTES8, BYTEARRAY8
      case 0x7d: push(new PyDict()); break; // EMPTY_DICT
      case 0x5d: case 0x8f: push([]); break; // EMPTY_LIST, EMPTY_SET (a set becomes a list)
      case 0x29: push(new PyTuple([])); break; // EMPTY_TUPLE
      case 0x74: push(new PyTuple(popMark())); break; // TUPLE
      case 0x85: push(new PyTuple([pop()])); break;
      case 0x86: { const b = pop(); const a = pop(); push(new PyTuple([a, b])); break; }
      case 0x87: { const c = pop(); const b = pop(); const a = pop(); push(new PyTuple([a, b, c])); break; }
      case 0x6c: push(popMark()); break; // LIST
      case 0x91: push(popMark()); break; // FROZENSET
      case 0x64: { const d = new PyDict(); setItems(d, popMark()); push(d); break; } // DICT
      case 0x61: { const v = pop(); appendItems(top(), [v]); break; } // APPEND
      case 0x65: case 0x90: { const items = popMark(); appendItems(top(), items); break; } // APPENDS, ADDITEMS
      case 0x73: { const v = pop(); const k = pop(); setItems(top(), [k, v]); break; } // SETITEM
      case 0x75: { const items = popMark(); setItems(top(), items); break; } // SETITEMS
      case 0x71: memoPut(data[need(1)]!); break; // BINPUT
      case 0x72: memoPut(data.readUInt32LE(need(4))); break; // LONG_BINPUT
      case 0x94: memoPut(memo.size); break; // MEMOIZE
      case 0x68: memoGet(data[need(1)]!); break; // BINGET
      case 0x6a: memoGet(data.readUInt32LE(need(4))); break; // LONG_BINGET
      case 0x63: { const module = line(); push(global(module, line())); break; } // GLOBAL
      case 0x93: { // STACK_GLOBAL
        const name = pop();
        const module = pop();
        if (typeof module !== 'string' || typeof name !== 'string') fail('its pickle has a STACK_GLOBAL without names');
        push(global(module, name));
        break;
      }
      case 0x52: { // REDUCE: fn(*args)
        const args = pop();
        const fn = pop();
        if (!(args instanceof PyTuple)) fail('its pickle calls with arguments that are not a tuple');
        push(call(fn, args.items));
        break;
      }
      case 0x6f: { const items = popMark(); push(call(items[0] ?? null, items.slice(1))); break; } // OBJ: cls(*args)
      case 0x69: { const module = line(); const fn = global(module, line()); push(call(fn, popMark())); break; } // INST
      case 0x81: case 0x92: { // NEWOBJ, NEWOBJ_EX: cls.__new__(cls, ...), kept inert
        if (op === 0x92) pop();
        pop();
        const cls = pop();
        if (!(cls instanceof PyGlobal)) fail('its pickle creates an object of something that is not a class');
        push(new Opaque(cls.qualified));
        break;
      }
      case 0x62: { // BUILD: set an object's state
        pop();
        const target = top();
        // The state of an inert object, a dict's attributes (a state dict's `_metadata`) or a hook's value carry
        // nothing Soundry reads.
        if (!(target instanceof Opaque || target instanceof PyDict || target instanceof Native)) fail('its pickle sets the state of a plain value');
        break;
      }
      case 0x51: push(hooks.persistentLoad(pop())); break; // BINPERSID
      default:
        fail(`its pickle uses opcode 0x${op.toString(16).padStart(2, '0')} at byte ${p - 1}, which torch.save does not write`);
    }
  }
}

/**
 * The output tree: tuples and lists become arrays, dicts objects without a prototype (so a key '__proto__' is only a
 * key), stored globals their dotted names, hook values their `plain` at their dotted path (list items by index).
 * Dict keys that are numbers become strings (a Lightning optimizer state is keyed 0, 1, ...); a dict keyed by anything
 * else becomes Opaque.
 */
export function toPlain(root: PyValue, limits: PickleLimits = DEFAULT_LIMITS): PlainValue {
  let values = 0;
  // The path is kept as a chain and spelled out only for hook values: building every node's dotted string would make
  // a large (or hostile, widely shared) tree quadratic.
  interface Path {
    readonly parent: Path | null;
    readonly key: string | number;
  }
  const spell = (path: Path | null): string => {
    const keys: (string | number)[] = [];
    for (let p = path; p; p = p.parent) keys.push(p.key);
    return keys.reverse().join('.');
  };
  const walk = (v: PyValue, depth: number, path: Path | null): PlainValue => {
    if (++values > limits.maxValues) fail(`it holds more than ${limits.maxValues} values (or shares one exponentially)`);
    if (v === null || typeof v !== 'object') return v;
    if (v instanceof Native) return v.plain(spell(path));
    if (v instanceof Opaque) return v;
    if (v instanceof PyGlobal) return v.qualified;
    if (v instanceof PyBytes) return new Opaque('bytes');
    // A value that contains itself nests without end, so the depth bound refuses cycles too.
    if (depth >= limits.maxDepth) fail(`it nests values more than ${limits.maxDepth} deep (or holds a value that contains itself)`);
    const items = Array.isArray(v) ? v : v instanceof PyTuple ? v.items : undefined;
    if (items) {
      const out: PlainValue[] = new Array<PlainValue>(items.length);
      for (let i = 0; i < items.length; i++) out[i] = walk(items[i]!, depth + 1, { parent: path, key: i });
      return out;
    }
    const out: Record<string, PlainValue> = Object.create(null) as Record<string, PlainValue>;
    for (const [k, x] of (v as PyDict).entries) {
      if (typeof k !== 'string' && typeof k !== 'number' && typeof k !== 'bigint') return new Opaque('dict with non-string keys');
      const key = String(k);
      out[key] = walk(x, depth + 1, { parent: path, key });
    }
    return out;
  };
  return walk(root, 0, null);
}
