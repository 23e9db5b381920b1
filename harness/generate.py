"""Runs the reference harness's cases: each harness/cases/<case>.py's ``generate(out_dir, size)``.

  harness/.venv/bin/python harness/generate.py --size small [--case NAME ...]   # -> test/fixtures/golden/<case>/
  harness/.venv/bin/python harness/generate.py --size full  [--case NAME ...]   # -> harness/out/<case>/

Each case's folder is emptied before its module runs, so a file a case stops writing does not linger. Cases are
found at run time (every module in harness/cases/ that defines ``generate``), so adding a case needs no edit here.
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import shutil
import sys
import time

HARNESS = pathlib.Path(__file__).resolve().parent
ROOT = HARNESS.parent
CASES = HARNESS / 'cases'
OUT = {'small': ROOT / 'test' / 'fixtures' / 'golden', 'full': HARNESS / 'out'}

# Case modules import `common` and `reference_imports` from harness/.
sys.path.insert(0, str(HARNESS))


def discover() -> list[str]:
    return sorted(p.stem for p in CASES.glob('*.py') if not p.stem.startswith('_'))


def load(name: str):
    path = CASES / f'{name}.py'
    spec = importlib.util.spec_from_file_location(f'harness_case_{name}', path)
    if spec is None or spec.loader is None:
        raise SystemExit(f'cannot load case {name} from {path}')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, 'generate', None)):
        raise SystemExit(f'{path} defines no generate(out_dir, size)')
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--size', choices=sorted(OUT), required=True)
    parser.add_argument('--case', action='append', default=[], help='case name (repeatable); default: every case')
    parser.add_argument('--out', type=pathlib.Path, help='write the case folders here instead')
    args = parser.parse_args()

    available = discover()
    names = args.case or available
    unknown = [n for n in names if n not in available]
    if unknown:
        raise SystemExit(f'unknown case(s) {", ".join(unknown)}; available: {", ".join(available)}')
    root = (args.out or OUT[args.size]).resolve()
    for name in names:
        module = load(name)
        out_dir = root / name
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        started = time.monotonic()
        module.generate(out_dir, args.size)
        if not (out_dir / 'case.json').is_file() or not (out_dir / 'golden.safetensors').is_file():
            raise SystemExit(f'case {name} wrote no case.json or golden.safetensors into {out_dir}')
        size = sum(p.stat().st_size for p in out_dir.rglob('*') if p.is_file())
        print(f'{name} ({args.size}): {out_dir} {size / 1e6:.2f} MB in {time.monotonic() - started:.1f} s', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
