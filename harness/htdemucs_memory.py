"""Where one HTDemucs segment's peak memory goes, seen from Python's onnxruntime (which exposes what onnxruntime-node
does not: SessionOptions.enable_mem_reuse and the profiler's per-node output shapes). Runs the graph Soundry's loader
builds beside the checkpoint (`<name>.graph.onnx`; build it with bench/htdemucs-memory.ts or any engine run) on
seeded noise of the graph's input shapes, with the session options of src/engines/separation/onnx/session.ts
(optimisation all, arena off, memory patterns off) unless a variant changes them.

    harness/.venv/bin/python harness/htdemucs_memory.py run GRAPH [reuse|noreuse|arena] [threads]
        one JSON line: VmHWM after create, after a first and a second run, RSS after each, run seconds.
        Set MALLOC_MMAP_THRESHOLD_=65536 in the environment to keep glibc from serving tensors under 32 MB from its heap.
    harness/.venv/bin/python harness/htdemucs_memory.py replay GRAPH
        profiles one run, then replays the executed kernels in order with each output sized from the profile and
        freed after its last consumer: the live set the graph needs, its peak and the tensors alive there.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

DTYPE_BYTES = {'float': 4, 'double': 8, 'int64': 8, 'int32': 4, 'float16': 2, 'bool': 1}


def status_mb(key: str) -> int:
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith(key + ':'):
            return int(line.split()[1]) // 1024
    raise RuntimeError(f'no {key}')


def options(variant: str = 'reuse', threads: int = 2) -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.enable_cpu_mem_arena = variant == 'arena'
    so.enable_mem_pattern = variant == 'arena'
    so.enable_mem_reuse = variant != 'noreuse'
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return so


def feeds(session: ort.InferenceSession) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(27)
    return {i.name: (rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]) * 0.1).astype(np.float32)
            for i in session.get_inputs()}


def run(graph: str, variant: str, threads: int) -> None:
    s = ort.InferenceSession(graph, options(variant, threads), providers=['CPUExecutionProvider'])
    x = feeds(s)
    out: dict[str, object] = {'variant': variant, 'threads': threads, 'hwm_after_create': status_mb('VmHWM')}
    for k in (1, 2):
        t0 = time.perf_counter()
        s.run(None, x)
        out[f'run{k}_s'] = round(time.perf_counter() - t0, 1)
        out[f'hwm_after_run{k}'] = status_mb('VmHWM')
        out[f'rss_after_run{k}'] = status_mb('VmRSS')
    print(json.dumps(out))


def replay(graph: str) -> None:
    work = Path(tempfile.mkdtemp(prefix='htdemucs_memory_'))
    so = options()
    so.optimized_model_filepath = str(work / 'optimized.onnx')
    so.add_session_config_entry('session.optimized_model_external_initializers_file_name', 'optimized.data')
    so.add_session_config_entry('session.optimized_model_external_initializers_min_size_in_bytes', '1024')
    so.enable_profiling = True
    so.profile_file_prefix = str(work / 'profile')
    s = ort.InferenceSession(graph, so, providers=['CPUExecutionProvider'])
    s.run(None, feeds(s))
    events = sorted((e for e in json.loads(Path(s.end_profiling()).read_text())
                     if e.get('cat') == 'Node' and e['name'].endswith('_kernel_time')), key=lambda e: e['ts'])
    model = onnx.load(str(work / 'optimized.onnx'), load_external_data=False)
    nodes = {n.name: n for n in model.graph.node}
    outputs = {o.name for o in model.graph.output}
    size: dict[str, int] = {}
    order = []
    for e in events:
        n = nodes[e['name'][:-len('_kernel_time')]]
        for name, typed in zip(n.output, e['args'].get('output_type_shape', [])):
            (dtype, shape), = typed.items()
            size[name] = int(np.prod(shape)) * DTYPE_BYTES.get(dtype, 4)
        order.append(n)
    last = {x: i for i, n in enumerate(order) for x in n.input}
    live: dict[str, int] = {}
    peak, at, snapshot = 0, 0, {}
    for i, n in enumerate(order):
        for o in n.output:
            live[o] = size.get(o, 0)
        total = sum(live.values())
        if total > peak:
            peak, at, snapshot = total, i, dict(live)
        for x in set(n.input):
            if x in live and last.get(x) == i and x not in outputs:
                del live[x]
    print(json.dumps({
        'kernels': len(order), 'missing_from_profile': len(nodes) - len(order),
        'peak_live_mb': round(peak / 2 ** 20, 1), 'at_kernel': at, 'at': f'{order[at].op_type} {order[at].name}',
        'largest_alive_at_peak_mb': [[k, round(v / 2 ** 20, 1)] for k, v in sorted(snapshot.items(), key=lambda kv: -kv[1])[:8]],
    }))


if __name__ == '__main__':
    mode, graph = sys.argv[1], sys.argv[2]
    if mode == 'run':
        run(graph, sys.argv[3] if len(sys.argv) > 3 else 'reuse', int(sys.argv[4]) if len(sys.argv) > 4 else 2)
    elif mode == 'replay':
        replay(graph)
    else:
        raise SystemExit(__doc__)
