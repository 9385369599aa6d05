"""The report: from results files (benchmarks/results/*.json) to index.html and report.md with charts.

A pure function of the results files (plus the registry's cost models where a row lacks its own), so
that it renders on a machine without a GPU. Every family found in the results gets a section: per op
and dtype the curves of every provider against size (GB/s for memory-bound ops, TFLOP/s for
compute-bound ones, decided from each row's cost model and the ceilings) with the ceiling drawn, the
table, and paragraphs whose figures are all computed from the measurements; the Nsight Compute
readings are diagnosed (profile.diagnose), and every reading whose DRAM bytes differ from the cost
model by more than 10% is listed with its cause. Of several files of one family and device, the
newest is shown. The page is built once as a list of blocks, then written as self-contained HTML
(images inlined) and as Markdown.

`render_png` / `check_render` look at the page as a person would: headless Chromium renders it to a
PNG, and the check asserts that every chart decoded and shows something, and that the numbers are on
the page as text.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

from rooftop.bench.plots import SHAPE_INDEX, plot_curves, size_label
from rooftop.hardware import Ceilings, ceilings_for, lookup_spec
from rooftop.profile.diagnose import EXTRA_BYTES_PCT, diagnose
from rooftop.roofline import Cost, explain, plot_roofline, ridge_point

# Where an op with no FLOPs sits on the log-scale roofline chart (FLOP/byte).
ZERO_FLOPS_INTENSITY = 0.01
_PROVIDER_ORDER = ("rooftop", "eager", "compile")
_DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
_SHORT_DTYPE = {v: k for k, v in _DTYPE_NAMES.items()}
_DIM_NAMES = {2: "MN", 3: "MNK", 4: "BHSD"}


def load_results(folder="benchmarks/results") -> list[dict]:
    """Every results file in folder (DESIGN.md format), each with its file name added as "_file"."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"load_results: folder={str(folder)!r} is not a directory")
    results = []
    for path in sorted(folder.glob("*.json")):
        try:
            result = json.loads(path.read_text())
            if not isinstance(result, dict) or not isinstance(result.get("rows"), list):
                raise ValueError("not an object with a 'rows' list")
        except (OSError, ValueError) as err:
            warnings.warn(f"load_results: skipping {path}: {err}")
            continue
        result["_file"] = path.name
        results.append(result)
    return results


def latest(results: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """The newest file of each (device, family), and {older file: the file that supersedes it}."""
    newest: dict[tuple, dict] = {}
    for r in results:
        key = (r.get("device"), _family(r))
        if key not in newest or (r.get("date", ""), r["_file"]) > (newest[key].get("date", ""), newest[key]["_file"]):
            newest[key] = r
    shown = [r for r in results if newest[(r.get("device"), _family(r))] is r]
    superseded = {r["_file"]: newest[(r.get("device"), _family(r))]["_file"] for r in results if r not in shown}
    return shown, superseded


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _family(result: dict) -> str:
    stem = Path(result["_file"]).stem
    found = re.search(r"\d{4}-\d{2}-\d{2}-(.+)$", stem)
    return found.group(1) if found else stem


def _shape(shape) -> str:
    return "×".join(str(s) for s in shape)


def _dtype(name: str) -> str:
    return _DTYPE_NAMES.get(name, name)


def _result_ceilings(result: dict) -> Ceilings | None:
    """The ceilings the results were measured against; else the cache or datasheet for the device."""
    given = result.get("ceilings") or {}
    device = result.get("device", "unknown device")
    if given.get("copy_GBps") and given.get("bf16_mm_TFLOPs"):
        return Ceilings(device, given["copy_GBps"], given["bf16_mm_TFLOPs"], source="results",
                        date=result.get("date", "?"), torch=result.get("torch", "?"))
    try:
        return ceilings_for(device)
    except ValueError:
        return None


def _registered(op: str):
    """The registry's OpSpec of op, or None when this checkout does not register it (or cannot import
    its op files: the report renders from the results files regardless)."""
    from rooftop import registry

    try:
        return registry.get(op)
    except KeyError:
        return None
    except Exception as err:  # an op file that fails to import
        warnings.warn(f"report: the registry could not be read ({type(err).__name__}: {err}); "
                      f"using the results files' own figures")
        return None


def _registry_cost(op: str, shape, dtype: str) -> Cost | None:
    """The registry's cost model of op at shape, when the op is registered here."""
    import torch

    spec = _registered(op)
    try:
        return spec.cost(tuple(shape), getattr(torch, _dtype(dtype))) if spec else None
    except Exception:  # a shape its cost model does not take
        return None


def _row_cost(row: dict) -> Cost | None:
    """The row's cost model: its own figures, else recovered from its GB/s and TFLOP/s, else the registry's."""
    if row.get("bytes"):
        return Cost(row.get("flops") or 0, row["bytes"])
    if row.get("GBps") and row.get("ms"):
        seconds = row["ms"] * 1e-3
        return Cost((row.get("TFLOPs") or 0) * 1e12 * seconds, row["GBps"] * 1e9 * seconds)
    return _registry_cost(row["op"], row["shape"], row.get("dtype", "bfloat16"))


def _with_rates(row: dict) -> dict:
    """The row with GBps and TFLOPs both counted from its cost model (one may be stored as null)."""
    cost = _row_cost(row)
    if cost is None or not row.get("ms"):
        return row
    seconds = row["ms"] * 1e-3
    return {**row, "GBps": cost.achieved_GBps(seconds), "TFLOPs": cost.achieved_TFLOPs(seconds)}


def _metric(rows: list[dict], c: Ceilings | None) -> str:
    """TFLOPs when most of the rows' costs are compute-bound on these ceilings, else GBps."""
    costs = [cost for cost in map(_row_cost, rows) if cost is not None]
    if c is not None and costs:
        compute = sum(cost.bound(c) == "compute" for cost in costs)
        return "TFLOPs" if compute > len(costs) / 2 else "GBps"
    return "GBps" if all(r.get("TFLOPs") is None for r in rows) else "TFLOPs"


def _x_key(rows: list[dict], preferred: str | None = None) -> str:
    """The shape entry the sweep varies: the registry's x_key when it does, else N or M for [M, N] and
    [M, N, K], S (or M = B) for 4-D shapes."""
    rank = len(rows[0]["shape"])
    candidates = {2: ("N", "M"), 3: ("M", "N")}.get(rank, ("S", "M") if rank >= 4 else ("N",))
    if preferred in SHAPE_INDEX:
        candidates = (preferred, *candidates)
    for key in candidates:
        if -rank <= SHAPE_INDEX[key] < rank and len({tuple(r["shape"])[SHAPE_INDEX[key]] for r in rows}) > 1:
            return key
    return candidates[0] if rank > 1 else "N"


def _series(rows: list[dict], x_key: str) -> list[tuple[str | None, list[dict]]]:
    """The rows as curves: one chart, or one per value of the shape entry that makes x repeat."""
    x = SHAPE_INDEX[x_key] % len(rows[0]["shape"])
    seen = set()
    repeats = False
    for r in rows:
        key = (r["provider"], r["shape"][x])
        repeats |= key in seen
        seen.add(key)
    if not repeats:
        return [(None, rows)]
    rank = len(rows[0]["shape"])
    others = [i for i in range(rank) if i != x and len({r["shape"][i] for r in rows}) > 1]
    split = min(others, key=lambda i: len({r["shape"][i] for r in rows}))
    name = _DIM_NAMES.get(rank, "?" * rank)[split] if rank in _DIM_NAMES else f"dim {split}"
    groups: dict[int, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["shape"][split], []).append(r)
    return [(f"{name}={value}", group) for value, group in sorted(groups.items())]


def _ordered_providers(rows: list[dict]) -> list[str]:
    seen = list(dict.fromkeys(r["provider"] for r in rows))
    return [p for p in _PROVIDER_ORDER if p in seen] + [p for p in seen if p not in _PROVIDER_ORDER]


def _value_cell(row: dict | None, metric: str) -> str:
    if row is None or row.get(metric) is None:
        return "—"
    value = f"{row[metric]:.0f}" if metric == "GBps" else f"{row[metric]:.1f}"
    return value if row.get("roofline_pct") is None else f"{value} ({row['roofline_pct']:.1f}%)"


def _range(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def _ncu_entries(result: dict) -> list[dict]:
    """The file's Nsight Compute readings with dtype names as the rows spell them."""
    return [{**e, "dtype": _dtype(e.get("dtype", "bfloat16")), "provider": e.get("provider", "rooftop")}
            for e in result.get("ncu") or []]


def _diagnosis(entry: dict, rows: list[dict], c: Ceilings | None, device: str):
    """profile.diagnose of one ncu reading, with the cost model of its op at its shape."""
    row = next((r for r in rows if r["op"] == entry.get("op") and list(r["shape"]) == list(entry.get("shape", []))
                and _dtype(r.get("dtype", "bfloat16")) == entry["dtype"]), None)
    cost = _row_cost(row) if row else _registry_cost(entry.get("op", "?"), entry.get("shape", []), entry["dtype"])
    shape = entry.get("shape")
    itemsize = {"bfloat16": 2, "float16": 2, "float32": 4}.get(entry["dtype"])
    return diagnose(entry, cost, shape, itemsize, c, device)


# ---------------------------------------------------------------------------------------------
# Sections


def _op_section(result: dict, op: str, dtype: str, rows: list[dict], c: Ceilings | None,
                out_dir: Path) -> tuple[list[tuple], dict | None, dict]:
    """Blocks for one (op, dtype) of a results file, the rooftop row that represents it, and a summary."""
    device = result.get("device", "unknown device")
    blocks = [("h3", f"{op} ({dtype})")]
    rows = [_with_rates(r) for r in rows]
    metric = _metric(rows, c)
    unit = "GB/s" if metric == "GBps" else "TFLOP/s"
    spec = _registered(op)
    x_key = _x_key(rows, spec.x_key if spec else None)
    x_index = SHAPE_INDEX[x_key] % len(rows[0]["shape"])

    ceiling = ceiling_label = None
    if c is not None:
        ceiling = c.copy_GBps if metric == "GBps" else c.bf16_mm_TFLOPs
        ceiling_label = (f"copy ceiling {ceiling:.0f} GB/s" if metric == "GBps"
                         else f"bf16 matmul ceiling {ceiling:.0f} TFLOP/s")
    for label, series in _series(rows, x_key):
        if not any(r.get(metric) is not None for r in series):
            continue
        suffix = f" ({label})" if label else ""
        png = f"{_slug(Path(result['_file']).stem)}-{_slug(op)}-{_slug(dtype)}{_slug('-' + label) if label else ''}.png"
        plot_curves(series, out_dir / png, metric=metric, x_key=x_key, ceiling=ceiling,
                    ceiling_label=ceiling_label, title=f"{op} {dtype}{suffix} on {device}")
        blocks.append(("img", png, f"{op} {dtype}{suffix}: {unit} by {x_key}"))

    providers = _ordered_providers(rows)
    by_shape: dict[tuple, dict[str, dict]] = {}
    for r in sorted(rows, key=lambda r: (r["shape"][x_index], r["shape"])):
        by_shape.setdefault(tuple(r["shape"]), {})[r["provider"]] = r
    speedup_over = [p for p in providers if p != "rooftop" and "rooftop" in providers]
    headers = ["shape"] + [f"{p} {unit} (% roofline)" for p in providers] + \
              [f"rooftop vs {p}" for p in speedup_over]
    table = []
    speedups: dict[str, list[tuple[float, tuple]]] = {p: [] for p in speedup_over}
    for shape, cells in by_shape.items():
        line = [_shape(shape)] + [_value_cell(cells.get(p), metric) for p in providers]
        for p in speedup_over:
            ours, theirs = cells.get("rooftop", {}).get("ms"), cells.get(p, {}).get("ms")
            line.append(f"{theirs / ours:.2f}x" if ours and theirs else "—")
            if ours and theirs:
                speedups[p].append((theirs / ours, shape))
        table.append(line)
    blocks.append(("table", headers, table))
    graph_blocks, graph_speedups = _graph_blocks(by_shape, providers, speedup_over)
    blocks += graph_blocks

    summary = {"op": op, "dtype": dtype, "unit": unit, "sizes": len(by_shape), "speedups": speedups,
               "graph_speedups": graph_speedups}
    ours = [r for r in rows if r["provider"] == "rooftop" and r.get("ms")]
    if not ours:
        blocks.append(("p", "No rooftop rows for this op, so no diagnosis."))
        return blocks, None, summary
    pcts = [r["roofline_pct"] for r in ours if r.get("roofline_pct") is not None]
    summary["pcts"] = pcts
    sentences = []
    if pcts:
        best = max(ours, key=lambda r: r.get("roofline_pct") or 0)
        worst = min(ours, key=lambda r: r.get("roofline_pct") or math.inf)
        xs = sorted(r["shape"][x_index] for r in ours)
        sentences.append(
            f"Over {len(ours)} sizes ({x_key} {size_label(xs[0])} to {size_label(xs[-1])}) rooftop reaches "
            f"{_range(pcts, '{:.1f}')}% of its roofline: best {best['roofline_pct']:.1f}% at "
            f"{_shape(best['shape'])}, worst {worst['roofline_pct']:.1f}% at {_shape(worst['shape'])}.")
    for p, values in speedups.items():
        if values:
            slower = [s for v, s in values if f"{v:.2f}" < "1.00"]
            where = f", slower at {', '.join(_shape(s) for s in slower)}" if slower else ""
            sentences.append(f"Against {p}: {_range([v for v, _ in values], '{:.2f}')}x{where}.")
    if sentences:
        blocks.append(("p", " ".join(sentences)))

    readings = [e for e in _ncu_entries(result) if e.get("op") == op and e["dtype"] == dtype]
    ours_ncu = {tuple(e.get("shape", [])): e for e in readings if e["provider"] == "rooftop"}
    at_ncu = [r for r in ours if tuple(r["shape"]) in ours_ncu and r.get("roofline_pct") is not None]
    # Explain the worst size Nsight Compute read, else the worst size.
    pool = at_ncu or [r for r in ours if r.get("roofline_pct") is not None] or ours
    representative = min(pool, key=lambda r: r.get("roofline_pct") or math.inf)
    cost = _row_cost(representative)
    if c is None or cost is None:
        blocks.append(("p", "No ceilings or cost model for these rows, so no diagnosis."))
        return blocks, representative, summary
    seconds = representative["ms"] * 1e-3
    baseline = {p: r["ms"] * 1e-3 for p, r in by_shape[tuple(representative["shape"])].items()
                if p != "rooftop" and r.get("ms")}
    label = f"{op} ({dtype}, {_shape(representative['shape'])})"
    blocks.append(("p", explain(label, cost, seconds, c, baseline=baseline)))
    verdicts = []
    for entry in sorted(readings, key=lambda e: (e["provider"] != "rooftop", e.get("shape", [])[::-1])):
        found = _diagnosis(entry, rows, c, device)
        who = "" if entry["provider"] == "rooftop" else f"{entry['provider']} "
        verdicts.append(f"{who}{found.verdict} at {_shape(entry.get('shape', []))}")
        blocks.append(("p", f"Nsight Compute, {entry['provider']} at {_shape(entry.get('shape', []))}: "
                            f"{found.text}"))
    summary["verdicts"] = verdicts
    return blocks, representative, summary


def _graph_blocks(by_shape: dict[tuple, dict[str, dict]], providers: list[str],
                  speedup_over: list[str]) -> tuple[list[tuple], dict[str, list[float]]]:
    """The GPU time alone of short calls (`graph_ms`: CUDA-graph replay over inputs rotated past L2),
    where do_bench's figure may be the host's launch cost: a table, and rooftop's ratios to each peer."""
    shapes = [shape for shape, cells in by_shape.items() if any(r.get("graph_ms") for r in cells.values())]
    if not shapes:
        return [], {}
    headers = ["shape"] + [f"{p} µs (% roofline)" for p in providers] + [f"rooftop vs {p}" for p in speedup_over]
    table, ratios = [], {p: [] for p in speedup_over}
    for shape in shapes:
        cells = by_shape[shape]
        line = [_shape(shape)]
        for p in providers:
            r = cells.get(p, {})
            line.append(f"{r['graph_ms'] * 1e3:.1f} ({r['graph_roofline_pct']:.1f}%)" if r.get("graph_ms") else "—")
        for p in speedup_over:
            ours, theirs = cells.get("rooftop", {}).get("graph_ms"), cells.get(p, {}).get("graph_ms")
            line.append(f"{theirs / ours:.2f}x" if ours and theirs else "—")
            if ours and theirs:
                ratios[p].append(theirs / ours)
        table.append(line)
    said = "; ".join(f"{_range(v, '{:.2f}')}x {p}" for p, v in ratios.items() if v)
    return [("p", "GPU time alone of the calls shorter than 0.3 ms (one CUDA graph replaying calls over input copies "
                  "that together exceed L2, so each reads from DRAM; no host launch cost; the providers' graphs "
                  "replayed in alternating bursts in the runs from 2026-12-04 on): the table above is "
                  f"do_bench from Python, which on this host can time the launch instead of the kernel. "
                  f"rooftop against the others here: {said or 'no peer timed this way'}."),
            ("table", headers, table)], ratios


def _summary_section(summaries: list[dict]) -> list[tuple]:
    """One line per op: rooftop's % of roofline over its sizes, its speed-ups, Nsight Compute's verdicts (and the
    card, where the results come from more than one)."""
    baselines = list(dict.fromkeys(p for s in summaries for p in s["speedups"]))
    cards = len({s["device"] for s in summaries}) > 1
    headers = ["family"] + ["card"] * cards + ["op", "dtype", "sizes", "rooftop % of roofline"] + \
              [f"vs {p}" for p in baselines] + ["Nsight Compute verdicts"]
    table = []
    for s in summaries:
        line = [s["family"]] + [s["device"].replace("NVIDIA ", "")] * cards + [
            s["op"], s["dtype"], str(s["sizes"]), _range(s["pcts"], "{:.1f}") if s.get("pcts") else "—"]
        for p in baselines:
            values = [v for v, _ in s["speedups"].get(p, [])]
            cell = _range(values, "{:.2f}") + "x" if values else "—"
            alone = s.get("graph_speedups", {}).get(p)
            if alone:  # short calls timed on the GPU alone too: where the host may have set do_bench's figure
                cell += f" (GPU alone: {_range(alone, '{:.2f}')}x)"
            line.append(cell)
        line.append(", ".join(s.get("verdicts", [])) or "—")
        table.append(line)
    return [("h2", "At a glance"), ("p", "Speed-ups are do_bench's (launched from Python, L2 flushed); in brackets "
                                        "the same ratio by GPU time alone where short calls were also timed so."),
            ("table", headers, table)]


def _traffic_section(results: list[dict]) -> list[tuple]:
    """Every Nsight Compute reading: DRAM bytes against the cost model's minimum, and why they differ."""
    table, flagged = [], []
    for result in results:
        c = _result_ceilings(result)
        device = result.get("device", "unknown device")
        for entry in _ncu_entries(result):
            found = _diagnosis(entry, result["rows"], c, device)
            f = found.figures
            if "extra_bytes_pct" not in f:
                continue
            table.append([entry.get("op", "?"), entry["provider"], _shape(entry.get("shape", [])),
                          f"{f['dram_bytes'] / 1e6:.1f}", f"{f['min_bytes'] / 1e6:.1f}",
                          f"{f['extra_bytes_pct']:+.1f}%",
                          f.get("traffic_cause", "—")])
            if abs(f["extra_bytes_pct"]) > EXTRA_BYTES_PCT:
                flagged.append(f"{entry.get('op')} ({entry['provider']}, {_shape(entry.get('shape', []))}) moves "
                               f"{f['extra_bytes_pct']:+.1f}% against the cost model: {f.get('traffic_cause')}.")
    if not table:
        return []
    blocks = [("h2", "DRAM bytes against the cost model (Nsight Compute)"),
              ("p", f"Nsight Compute flushes the caches before the kernel, so these are one cold call's DRAM bytes. "
                    f"Readings more than {EXTRA_BYTES_PCT}% away from the minimum (each input read once, each "
                    f"output written once): {len(flagged)} of {len(table)}."),
              ("table", ["op", "provider", "shape", "DRAM MB", "minimum MB", "difference", "cause"], table)]
    blocks += [("p", text) for text in flagged]
    return blocks


def _ncu_table(result: dict) -> list[tuple]:
    c = _result_ceilings(result)
    device = result.get("device", "unknown device")
    headers = ["op", "provider", "shape", "kernel", "µs", "DRAM % peak", "SM %", "occupancy % (theory)",
               "limited by", "regs", "smem B", "grid × block", "verdict"]
    table = []
    for e in _ncu_entries(result):
        found = _diagnosis(e, result["rows"], c, device)

        def num(key, fmt="{:.1f}"):
            return fmt.format(e[key]) if e.get(key) is not None else "—"

        occ = num("achieved_occupancy_pct") + (f" ({e['theoretical_occupancy_pct']:.0f})"
                                               if e.get("theoretical_occupancy_pct") is not None else "")
        smem = (e.get("static_shared_mem_per_block") or 0) + (e.get("dynamic_shared_mem_per_block") or 0)
        grid = f"{e['grid_size']:.0f} × {e['block_size']:.0f}" if e.get("grid_size") and e.get("block_size") else "—"
        kernel = str(e.get("kernel", "—"))
        table.append([e.get("op", "?"), e["provider"], _shape(e.get("shape", [])),
                      kernel if len(kernel) <= 28 else kernel[:25] + "...", num("duration_us"),
                      num("dram_throughput_pct"), num("sm_throughput_pct"), occ,
                      ", ".join(found.figures.get("occupancy_limited_by") or ()) or "none",
                      num("registers_per_thread", "{:.0f}"), f"{smem:.0f}", grid, found.verdict])
    return [("h3", "Nsight Compute"), ("table", headers, table)] if table else []


def _dict_table(entries: list[dict], first: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """A table of dicts: the `first` keys, then any others."""
    keys = [k for k in first if any(k in e for e in entries)]
    keys += [k for k in dict.fromkeys(k for e in entries for k in e) if k not in keys]

    def cell(value):
        if value is None:
            return "—"
        if isinstance(value, list):
            return _shape(value)
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    return keys, [[cell(e.get(k)) for k in keys] for e in entries]


def _device_section(device: str, c: Ceilings | None) -> list[tuple]:
    blocks = [("h2", f"Device: {device}")]
    if c is None:
        return blocks + [("p", "No ceilings in the results and no datasheet entry for this device.")]
    spec = lookup_spec(device)
    measured = f"{c.source} ({c.date})"
    headers = ["ceiling", measured] + (["datasheet", "% of datasheet"] if spec else [])
    rows = [["copy GB/s", f"{c.copy_GBps:.0f}"], ["bf16 matmul TFLOP/s", f"{c.bf16_mm_TFLOPs:.0f}"],
            ["ridge point FLOP/byte", f"{ridge_point(c):.0f}"]]
    if spec:
        sheet = [spec.mem_GBps, spec.bf16_TFLOPs, spec.bf16_TFLOPs * 1e3 / spec.mem_GBps]
        ours = [c.copy_GBps, c.bf16_mm_TFLOPs, ridge_point(c)]
        for line, s, o in zip(rows, sheet, ours):
            line += [f"{s:.0f}", f"{100 * o / s:.1f}%"]
    blocks.append(("table", headers, rows))
    if spec:
        blocks.append(("p", f"Datasheet ({spec.name}): {spec.memory_GB:g} GB, {spec.sms} SMs, "
                            f"{spec.l2_MB:g} MB L2. The roofline uses the {c.source} ceilings, "
                            f"not the datasheet."))
    return blocks


def _roofline_section(device: str, c: Ceilings, representatives: list[tuple[str, dict]],
                      out_dir: Path) -> list[tuple]:
    points, no_flops = [], []
    for dtype, row in representatives:
        cost = _row_cost(row)
        if cost is None or not cost.bytes:
            continue
        seconds = row["ms"] * 1e-3
        label = f"{row['op']} {_SHORT_DTYPE.get(dtype, dtype)}"
        if cost.flops > 0:
            intensity, tflops = cost.intensity, cost.achieved_TFLOPs(seconds)
        else:
            # Placed at a floor intensity, at the height its achieved GB/s gives there.
            intensity = ZERO_FLOPS_INTENSITY
            tflops = intensity * cost.bytes / seconds / 1e12
            no_flops.append(row["op"])
        points.append(dict(label=label, intensity=intensity, TFLOPs=tflops, provider="rooftop"))
    if not points:
        return []
    png = f"roofline-{_slug(device)}.png"
    plot_roofline(points, c, out_dir / png, title=f"rooftop ops on {device}")
    blocks = [("h2", f"Roofline: {device}"), ("img", png, f"roofline of rooftop ops on {device}"),
              ("p", f"{len(points)} ops, each at its worst size that Nsight Compute read, else its worst size.")]
    if no_flops:
        blocks.append(("p", f"{', '.join(dict.fromkeys(no_flops))}: no FLOPs, so drawn at "
                            f"{ZERO_FLOPS_INTENSITY} FLOP/byte, at the height of its achieved GB/s."))
    return blocks


def _blocks(all_results: list[dict], results_dir: Path, measured: bool, out_dir: Path) -> list[tuple]:
    results, superseded = latest(all_results)
    runs = "; ".join(dict.fromkeys(f"{r.get('device', '?')}, {r.get('date', '?')}" for r in results))
    banner = (f"Measured just now on this machine ({runs})." if measured else
              f"No GPU measurement in this run: rendered from the committed results in {results_dir} ({runs}).")
    blocks = [("h1", "rooftop report"), ("banner", banner)]

    ceilings: dict[str, Ceilings | None] = {}
    for result in results:
        device = result.get("device", "unknown device")
        if ceilings.get(device) is None:
            ceilings[device] = _result_ceilings(result)
    for device, c in ceilings.items():
        blocks += _device_section(device, c)
    blocks.append(("table", ["file", "device", "date", "torch", "triton", "rows", "shown"],
                   [[r["_file"], r.get("device", "?"), r.get("date", "?"), r.get("torch", "?"),
                     r.get("triton", "?"), str(len(r["rows"])),
                     f"superseded by {superseded[r['_file']]}" if r["_file"] in superseded else "yes"]
                    for r in all_results]))

    representatives: dict[str, list[tuple[str, dict]]] = {}
    summaries, family_blocks = [], []
    for result in sorted(results, key=_family):
        device = result.get("device", "unknown device")
        c = _result_ceilings(result)
        family_blocks.append(("h2", f"{_family(result)} ({result['_file']})"))
        if result.get("notes"):
            family_blocks.append(("p", result["notes"]))
        groups: dict[tuple[str, str], list[dict]] = {}
        for row in result["rows"]:
            groups.setdefault((row["op"], _dtype(row.get("dtype", "?"))), []).append(row)
        for (op, dtype), rows in groups.items():
            section, representative, summary = _op_section(result, op, dtype, rows, c, out_dir)
            family_blocks += section
            summaries.append({"family": _family(result), "device": device, **summary})
            if representative is not None:
                representatives.setdefault(device, []).append((dtype, representative))
        family_blocks += _ncu_table(result)
        for title, rows in result.get("tables", {}).items():
            family_blocks += [("h3", title), ("table", *_dict_table(rows, ()))]
        if result.get("decode_us"):
            family_blocks += [("h3", "Decode-size calls (µs per call: CUDA graph replay, Python launch)"),
                              ("table", *_dict_table(result["decode_us"],
                                                     ("op", "shape", "provider", "graph_us", "python_us")))]
        if result.get("host_calibration_us"):
            family_blocks += [("p", "Host launch cost (µs, from Python): " + ", ".join(
                f"{k} {v:.1f}" for k, v in result["host_calibration_us"].items()))]

    blocks += _summary_section(summaries)
    for device, reps in representatives.items():
        if ceilings.get(device) is not None:
            blocks += _roofline_section(device, ceilings[device], reps, out_dir)
    blocks += _traffic_section(results)
    return blocks + family_blocks


# ---------------------------------------------------------------------------------------------
# Writers


def _is_number(cell: str) -> bool:
    return bool(re.match(r"^[-+]?\d", cell))


_CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #ccc;padding:3px 8px}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.banner{background:#fff6d6;border:1px solid #e0c060;padding:8px}img{max-width:100%}"""


def _to_html(blocks: list[tuple], out_dir: Path) -> str:
    parts = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8"><title>rooftop report</title>',
             f"<style>{_CSS}</style></head><body>"]
    for kind, *args in blocks:
        if kind == "banner":
            parts.append(f'<p class="banner">{html.escape(args[0])}</p>')
        elif kind == "img":
            data = base64.b64encode((out_dir / args[0]).read_bytes()).decode()
            parts.append(f'<p><img src="data:image/png;base64,{data}" alt="{html.escape(args[1])}"></p>')
        elif kind == "table":
            headers, rows = args
            parts.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr>")
            for row in rows:
                cells = "".join(f'<td class="num">{html.escape(x)}</td>' if _is_number(x) or x == "—"
                                else f"<td>{html.escape(x)}</td>" for x in row)
                parts.append(f"<tr>{cells}</tr>")
            parts.append("</table>")
        else:
            parts.append(f"<{kind}>{html.escape(args[0])}</{kind}>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _to_markdown(blocks: list[tuple]) -> str:
    parts = []
    for kind, *args in blocks:
        if kind in ("h1", "h2", "h3"):
            parts.append("#" * int(kind[1]) + " " + args[0])
        elif kind == "banner":
            parts.append(f"> {args[0]}")
        elif kind == "img":
            parts.append(f"![{args[1]}]({args[0]})")
        elif kind == "table":
            headers, rows = args
            numeric = [all(_is_number(row[i]) or row[i] == "—" for row in rows) for i in range(len(headers))]
            lines = ["| " + " | ".join(headers) + " |",
                     "|" + "|".join("---:" if n else ":---" for n in numeric) + "|"]
            lines += ["| " + " | ".join(x.replace("|", "\\|") for x in row) + " |" for row in rows]
            parts.append("\n".join(lines))
        else:
            parts.append(args[0])
    return "\n\n".join(parts) + "\n"


def build_report(results_dir, out_dir, measured: bool) -> Path:
    """Write out_dir/index.html (self-contained) and out_dir/report.md (+ PNGs); returns index.html.

    measured: whether the results were just measured on this machine (else: committed results).
    """
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    results = load_results(results_dir)
    if not results:
        raise ValueError(f"build_report: no readable results files in results_dir={str(results_dir)!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    blocks = _blocks(results, results_dir, measured, out_dir)
    (out_dir / "report.md").write_text(_to_markdown(blocks), encoding="utf-8")
    index = out_dir / "index.html"
    index.write_text(_to_html(blocks, out_dir), encoding="utf-8")
    return index


# ---------------------------------------------------------------------------------------------
# Looking at the page: headless Chromium

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
PAGE_WIDTH = 1280
MAX_PAGE_HEIGHT = 60000
# Injected into a copy of the page: what the browser made of each image, and the page's text.
_PROBE = """<script>window.addEventListener("load", () => {
  const images = [...document.images].map(im => {const r = im.getBoundingClientRect();
    return {alt: im.alt, complete: im.complete, width: im.naturalWidth, height: im.naturalHeight,
            x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height};});
  const probe = document.createElement("pre"); probe.id = "rooftop-probe";
  probe.textContent = JSON.stringify({images, height: document.documentElement.scrollHeight,
                                      text: document.body.innerText});
  document.body.appendChild(probe);});</script>"""


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        if (path := shutil.which(name)) is not None:
            return path
    return None


def _chromium(browser: str, *args: str, timeout: float = 120) -> str:
    cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", "--virtual-time-budget=5000", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed (exit {proc.returncode}): {proc.stderr[-600:]}")
    return proc.stdout


def render_png(index_html, png, browser: str | None = None) -> dict:
    """Render the page in headless Chromium to `png` (full page); returns what the browser saw: each
    image's decoded size and place on the page, the page height, and its text."""
    browser = browser or find_chromium()
    if browser is None:
        raise FileNotFoundError("render_png: no Chromium found (tried " + ", ".join(CHROMIUM_NAMES) + ")")
    index_html, png = Path(index_html).resolve(), Path(png).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        probe_page = Path(tmp) / "probe.html"
        probe_page.write_text(index_html.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"),
                              encoding="utf-8")
        dom = _chromium(browser, f"--window-size={PAGE_WIDTH},1000", "--dump-dom", probe_page.as_uri())
    found = re.search(r'<pre id="rooftop-probe">(.*?)</pre>', dom, re.S)
    if found is None:
        raise RuntimeError("render_png: the page's probe did not run (no load event?)")
    seen = json.loads(html.unescape(found.group(1)))
    height = min(int(seen["height"]) + 20, MAX_PAGE_HEIGHT)
    _chromium(browser, f"--window-size={PAGE_WIDTH},{height}", f"--screenshot={png}", index_html.as_uri())
    if not png.exists():
        raise RuntimeError(f"render_png: chromium wrote no screenshot at {png}")
    return seen


def check_render(seen: dict, png, expected_text: tuple[str, ...] = ()) -> list[str]:
    """Problems with a rendered page (empty when it looks right): images that did not decode or show
    (almost) nothing in the screenshot, and expected strings (numbers) missing from the page's text."""
    from PIL import Image

    problems = []
    shot = Image.open(png).convert("RGB")
    if not seen["images"]:
        problems.append("the page shows no images")
    for im in seen["images"]:
        if not im["complete"] or not im["width"] or not im["height"]:
            problems.append(f"image {im['alt']!r} did not decode")
            continue
        box = (int(im["x"]), int(im["y"]), int(im["x"] + im["w"]), int(im["y"] + im["h"]))
        if box[2] - box[0] < 50 or box[3] - box[1] < 50 or box[3] > shot.height:
            problems.append(f"image {im['alt']!r} is not on the screenshot at a readable size ({box})")
            continue
        region = shot.crop(box)
        colours = region.getcolors(maxcolors=1 << 16)
        pixels = region.width * region.height
        white = sum(n for n, rgb in (colours or []) if min(rgb) > 245)
        if colours is not None and (len(colours) < 8 or white > 0.995 * pixels):
            problems.append(f"image {im['alt']!r} is blank on the screenshot")
    for text in expected_text:
        if text not in seen["text"]:
            problems.append(f"the page does not show {text!r}")
    return problems
