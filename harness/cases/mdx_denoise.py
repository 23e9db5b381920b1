"""MDX-Net with audio-separator's enable_denoise: the mdx case (harness/cases/mdx.py: the same model, mixture and
MDXSeparator.separate() run) with the network run on the spectrum and on its negation and the two averaged
(``-0.5 * model(-x) + 0.5 * model(x)``), which Soundry's MdxStage does with ``denoise: true``. The random network
is not odd-symmetric (ReLU, biases), so this differs from the plain case and proves the option's wiring."""
from __future__ import annotations

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location('harness_case_mdx_base', pathlib.Path(__file__).with_name('mdx.py'))
assert _spec is not None and _spec.loader is not None
_mdx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mdx)


def generate(out_dir: pathlib.Path, size: str) -> None:
    _mdx.generate(out_dir, size, denoise=True)
