"""HTDemucs-6s (drums, bass, other, vocals, guitar, piano) on seeded random weights: see htdemucs.py, whose
generator this case runs with the 6-source configuration (Meta's 5c90dfd2 kwargs, or a small one of its shape)."""
from __future__ import annotations

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location('harness_case_htdemucs_shared', pathlib.Path(__file__).with_name('htdemucs.py'))
assert _spec is not None and _spec.loader is not None
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)


def generate(out_dir: pathlib.Path, size: str) -> None:
    _shared.generate_variant(out_dir, size, 'htdemucs_6s')
