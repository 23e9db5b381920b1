/**
 * The calls any checkpoint may make (a pickle's REDUCE, OBJ or INST), reimplemented as pure constructors of values:
 * an OrderedDict, a Fraction, a set, bytes, and value types that training arguments hold (paths, dates), the last kept
 * inert. Anything not here is refused by the unpickler unless the caller's hooks know it (torch.ts: the tensor
 * rebuilders); nothing is ever imported or called.
 */
import { posix, win32 } from 'node:path';
import { Opaque } from './types.js';
import { PyBytes, PyDict, PyGlobal, PyTuple, fail, type PyValue } from './pickle-values.js';

function ints(args: readonly PyValue[]): number[] | undefined {
  return args.every((a) => typeof a === 'number' && Number.isInteger(a)) ? (args as number[]) : undefined;
}

/** The calls any checkpoint may make, reimplemented; each is a pure constructor of a value. */
export function genericCall(fn: PyGlobal, args: readonly PyValue[]): PyValue | undefined {
  switch (fn.qualified) {
    case 'collections.OrderedDict':
    case 'builtins.dict': {
      const d = new PyDict();
      const pairs = args[0];
      if (args.length === 0) return d;
      if (args.length === 1 && Array.isArray(pairs)) {
        for (const p of pairs) {
          if (!(p instanceof PyTuple || Array.isArray(p))) fail(`${fn.qualified} given a pair that is not a pair`);
          const kv = p instanceof PyTuple ? p.items : p;
          if (kv.length !== 2) fail(`${fn.qualified} given a pair of ${kv.length}`);
          d.entries.set(kv[0]!, kv[1]!);
        }
        return d;
      }
      return fail(`${fn.qualified} called with unexpected arguments`);
    }
    // The factory is a stored global, never called: the dict's items follow as SETITEMS or BUILD.
    case 'collections.defaultdict':
      return new PyDict();
    case 'collections.Counter': {
      const d = new PyDict();
      if (args[0] instanceof PyDict) for (const [k, v] of args[0].entries) d.entries.set(k, v);
      return d;
    }
    case 'fractions.Fraction': {
      const n = ints(args);
      if (n && n.length === 2 && n[1] !== 0) return n[0]! / n[1]!;
      if (n && n.length === 1) return n[0]!;
      const s = args[0];
      if (args.length === 1 && typeof s === 'string') {
        const m = /^\s*([+-]?\d+)(?:\s*\/\s*(\d+))?\s*$/.exec(s);
        if (m && m[2] !== '0') return Number(m[1]) / (m[2] === undefined ? 1 : Number(m[2]));
      }
      return fail(`fractions.Fraction called with unexpected arguments`);
    }
    case 'builtins.set':
    case 'builtins.frozenset':
      if (args.length === 0) return [];
      if (args.length === 1 && Array.isArray(args[0])) return [...args[0]];
      return fail(`${fn.qualified} called with unexpected arguments`);
    // Protocol 2 writes a bytes object as _codecs.encode(latin-1 text, 'latin1').
    case '_codecs.encode':
      if (args.length === 2 && typeof args[0] === 'string' && (args[1] === 'latin1' || args[1] === 'latin-1')) return new PyBytes(Buffer.from(args[0], 'latin1'));
      return fail('_codecs.encode called with unexpected arguments');
    // Object creation without a constructor call, as protocols 0 and 1 spell it: kept inert like NEWOBJ.
    case 'copyreg._reconstructor':
      if (args[0] instanceof PyGlobal && args[1] instanceof PyGlobal && args[1].qualified === 'builtins.object') return new Opaque(args[0].qualified);
      return fail('copyreg._reconstructor called with a base other than object');
    case 'copyreg.__newobj__':
    case 'copyreg.__newobj_ex__':
      if (args[0] instanceof PyGlobal) return new Opaque(args[0].qualified);
      return fail(`${fn.qualified} called without a class`);
    // Value types whose pickles are constructor calls (training arguments hold paths and dates): inert data.
    // A path pickles as its parts ('/', 'data', 'musdb'), or (newer Pythons) as one string.
    case 'pathlib.Path':
    case 'pathlib.PosixPath':
    case 'pathlib.PurePosixPath':
    case 'pathlib.WindowsPath':
    case 'pathlib.PureWindowsPath': {
      const parts = args.every((a) => typeof a === 'string') ? (args as string[]) : fail(`${fn.qualified} called with unexpected arguments`);
      if (parts.length === 0) return '.';
      return fn.name.includes('Windows') ? win32.join(...parts) : posix.join(...parts);
    }
    case 'builtins.bytearray':
    case 'builtins.complex':
    case 'datetime.datetime':
    case 'datetime.date':
    case 'datetime.time':
    case 'datetime.timedelta':
    case 'decimal.Decimal':
      return new Opaque(fn.qualified);
    // numpy arrays and scalars in training metadata (a Lightning callback's score): data, kept inert.
    case 'numpy.core.multiarray._reconstruct':
    case 'numpy._core.multiarray._reconstruct':
      return new Opaque('numpy.ndarray');
    case 'numpy.core.multiarray.scalar':
    case 'numpy._core.multiarray.scalar':
      return new Opaque('numpy scalar');
    case 'numpy.dtype':
      return new Opaque('numpy.dtype');
    default:
      return undefined;
  }
}

