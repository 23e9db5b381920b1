/**
 * The values the restricted unpickler (pickle.ts) builds while it runs: Python's tuples, dicts, bytes and global
 * references as distinct classes (so a pickled dict can never pass for anything a hook made), and the error it throws.
 */
import type { Opaque, PlainValue } from './types.js';

export class PickleError extends Error {}
/** The pickle ran past the bytes given: a caller reading a window of a file may retry with a larger one. */
export class PickleTruncated extends PickleError {}

export function fail(why: string): never {
  throw new PickleError(why);
}

export class PyTuple {
  constructor(readonly items: readonly PyValue[]) {}
}
export class PyDict {
  readonly entries = new Map<PyValue, PyValue>();
}
export class PyBytes {
  constructor(readonly bytes: Uint8Array) {}
}
/** A reference to a module attribute, never resolved. */
export class PyGlobal {
  constructor(
    readonly module: string,
    readonly name: string,
  ) {}
  get qualified(): string {
    return `${this.module}.${this.name}`;
  }
}
/** A value a hook built (a tensor, a storage): `plain(path)` is what it becomes at that dotted path of the output. */
export class Native {
  constructor(
    readonly payload: unknown,
    readonly plain: (path: string) => PlainValue,
  ) {}
}

export type PyValue = null | boolean | number | bigint | string | PyValue[] | PyTuple | PyDict | PyBytes | PyGlobal | Opaque | Native;

