"""The report: from results files (benchmarks/results/*.json) to index.html and report.md with charts.

A pure function of the results files, so that it renders on a machine without a GPU. The page is
built once as a list of blocks, then written both as self-contained HTML and as Markdown.
"""

from __future__ import annotations

import base64
import html
import json
import re
import warnings
from pathlib import Path

from rooftop.bench.plots import SHAPE_INDEX, plot_curves
from rooftop.hardware import Ceilings, ceilings_for, lookup_spec
from rooftop.roofline import Cost, explain, plot_roofline, ridge_point

# Where an op with no FLOPs sits on the log-scale roofline chart (FLOP/byte).
ZERO_FLOPS_INTENSITY = 0.01
_PROVIDER_ORDER = ("rooftop", "eager", "compile")
_SHORT_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
_NCU_KEYS = ("dram_throughput_pct", "achieved_occupancy_pct", "theoretical_occupancy_pct",
             "registers_per_thread", "dram_bytes", "duration_us", "spill_bytes", "shared_mem_per_block")


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


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _family(result: dict) -> str:
    stem = Path(result["_file"]).stem
    found = re.search(r"\d{4}-\d{2}-\d{2}-(.+)$", stem)
    return found.group(1) if found else stem


def _shape(shape) -> str:
    return "×".join(str(s) for s in shape)


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


def _row_cost(row: dict) -> Cost | None:
    """The row's cost model, or one recovered from its GB/s and TFLOP/s (which were counted from it)."""
    if row.get("bytes"):
        return Cost(row.get("flops") or 0, row["bytes"])
    if row.get("GBps") and row.get("ms"):
        seconds = row["ms"] * 1e-3
        return Cost((row.get("TFLOPs") or 0) * 1e12 * seconds, row["GBps"] * 1e9 * seconds)
    return None


def _traffic(row: dict) -> float:
    cost = _row_cost(row)
    if cost is not None:
        return cost.bytes
    size = 1
    for s in row["shape"]:
        size *= s
    return size


def _x_key(rows: list[dict]) -> str:
    """The shape entry the sweep varies: N or M for [M, N] and [M, N, K], S (or M=B) for 4-D shapes."""
    rank = len(rows[0]["shape"])
    candidates = {2: ("N", "M"), 3: ("M", "N")}.get(rank, ("S", "M") if rank >= 4 else ("N",))
    for key in candidates:
        if len({tuple(r["shape"])[SHAPE_INDEX[key]] for r in rows}) > 1:
            return key
    return candidates[0]


def _ordered_providers(rows: list[dict]) -> list[str]:
    seen = list(dict.fromkeys(r["provider"] for r in rows))
    return [p for p in _PROVIDER_ORDER if p in seen] + [p for p in seen if p not in _PROVIDER_ORDER]


def _value_cell(row: dict | None, metric: str) -> str:
    if row is None or row.get(metric) is None:
        return "—"
    value = f"{row[metric]:.0f}" if metric == "GBps" else f"{row[metric]:.1f}"
    return value if row.get("roofline_pct") is None else f"{value} ({row['roofline_pct']:.1f}%)"


def _dict_table(entries: list[dict], first: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """A table of dicts: the `first` keys, then any others; *_bytes shown in MB."""
    keys = [k for k in first if any(k in e for e in entries)]
    keys += [k for k in dict.fromkeys(k for e in entries for k in e) if k not in keys]

    def cell(key, value):
        if value is None:
            return "—"
        if isinstance(value, list):
            return _shape(value)
        if key.endswith("_bytes") and isinstance(value, (int, float)):
            return f"{value / 1e6:.1f}"
        return f"{value:.1f}" if isinstance(value, float) else str(value)

    headers = [f"{k} (MB)" if k.endswith("_bytes") else k for k in keys]
    return headers, [[cell(k, e.get(k)) for k in keys] for e in entries]


def _matching_ncu(result: dict, op: str, dtype: str) -> dict | None:
    for entry in result.get("ncu") or []:
        if entry.get("op") == op and entry.get("provider", "rooftop") == "rooftop" \
                and entry.get("dtype", dtype) == dtype:
            return entry
    return None


def _op_section(result: dict, op: str, dtype: str, rows: list[dict], c: Ceilings | None,
                out_dir: Path) -> tuple[list[tuple], dict | None]:
    """Blocks for one (op, dtype) of a results file, and the rooftop row that represents it."""
    device = result.get("device", "unknown device")
    blocks = [("h3", f"{op} ({dtype})")]
    metric = "GBps" if all(r.get("TFLOPs") is None for r in rows) else "TFLOPs"
    unit = "GB/s" if metric == "GBps" else "TFLOP/s"
    x_key = _x_key(rows)

    ceiling = ceiling_label = None
    if c is not None:
        ceiling = c.copy_GBps if metric == "GBps" else c.bf16_mm_TFLOPs
        ceiling_label = (f"copy ceiling {ceiling:.0f} GB/s" if metric == "GBps"
                         else f"bf16 matmul ceiling {ceiling:.0f} TFLOP/s")
    png = f"{_slug(Path(result['_file']).stem)}-{_slug(op)}-{_slug(dtype)}.png"
    if any(r.get(metric) is not None for r in rows):
        plot_curves(rows, out_dir / png, metric=metric, x_key=x_key, ceiling=ceiling,
                    ceiling_label=ceiling_label, title=f"{op} {dtype} on {device}")
        blocks.append(("img", png, f"{op} {dtype}: {unit} by {x_key}"))

    providers = _ordered_providers(rows)
    by_shape: dict[tuple, dict[str, dict]] = {}
    for r in sorted(rows, key=lambda r: (tuple(r["shape"])[SHAPE_INDEX[x_key]], r["shape"])):
        by_shape.setdefault(tuple(r["shape"]), {})[r["provider"]] = r
    speedup_over = [p for p in ("eager", "compile") if p in providers and "rooftop" in providers]
    headers = ["shape"] + [f"{p} {unit} (% roofline)" for p in providers] + \
              [f"rooftop vs {p}" for p in speedup_over]
    table = []
    for shape, cells in by_shape.items():
        line = [_shape(shape)] + [_value_cell(cells.get(p), metric) for p in providers]
        for p in speedup_over:
            ours, theirs = cells.get("rooftop", {}).get("ms"), cells.get(p, {}).get("ms")
            line.append(f"{theirs / ours:.2f}x" if ours and theirs else "—")
        table.append(line)
    blocks.append(("table", headers, table))

    ours = [r for r in rows if r["provider"] == "rooftop" and r.get("ms")]
    if not ours:
        return blocks, None
    ncu = _matching_ncu(result, op, dtype)
    at_ncu_shape = [r for r in ours if ncu is not None and list(r["shape"]) == list(ncu.get("shape", []))]
    # Explain where the ncu reading was taken, else at the largest traffic (furthest from launch cost).
    representative = at_ncu_shape[0] if at_ncu_shape else max(ours, key=_traffic)
    cost = _row_cost(representative)
    if c is None or cost is None:
        blocks.append(("p", "No ceilings or cost model for these rows, so no diagnosis."))
        return blocks, representative
    seconds = representative["ms"] * 1e-3
    baseline = {p: r["ms"] * 1e-3 for p, r in by_shape[tuple(representative["shape"])].items()
                if p != "rooftop" and r.get("ms")}
    label = f"{op} ({dtype}, {_shape(representative['shape'])})"
    blocks.append(("p", explain(label, cost, seconds, c, ncu=ncu if at_ncu_shape else None,
                                baseline=baseline)))
    return blocks, representative


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
        if not row.get("bytes") or row.get("flops") is None:
            continue
        seconds = row["ms"] * 1e-3
        label = f"{row['op']} {_SHORT_DTYPE.get(dtype, dtype)}"
        if row["flops"] > 0:
            intensity, tflops = row["flops"] / row["bytes"], row["flops"] / seconds / 1e12
        else:
            # Placed at a floor intensity, at the height its achieved GB/s gives there.
            intensity = ZERO_FLOPS_INTENSITY
            tflops = intensity * row["bytes"] / seconds / 1e12
            no_flops.append(row["op"])
        points.append(dict(label=label, intensity=intensity, TFLOPs=tflops, provider="rooftop"))
    if not points:
        return []
    png = f"roofline-{_slug(device)}.png"
    plot_roofline(points, c, out_dir / png, title=f"rooftop ops on {device}")
    blocks = [("h2", f"Roofline: {device}"), ("img", png, f"roofline of rooftop ops on {device}"),
              ("p", "Each op at its largest-traffic size (or where Nsight Compute read it).")]
    if no_flops:
        blocks.append(("p", f"{', '.join(dict.fromkeys(no_flops))}: no FLOPs, so drawn at "
                            f"{ZERO_FLOPS_INTENSITY} FLOP/byte, at the height of its achieved GB/s."))
    return blocks


def _blocks(results: list[dict], results_dir: Path, measured: bool, out_dir: Path) -> list[tuple]:
    runs = "; ".join(dict.fromkeys(f"{r.get('device', '?')}, {r.get('date', '?')}" for r in results))
    banner = (f"Measured just now on this machine ({runs})." if measured else
              f"Rendered from committed results in {results_dir} ({runs}), not measured on this machine.")
    blocks = [("h1", "rooftop report"), ("banner", banner)]

    ceilings: dict[str, Ceilings | None] = {}
    for result in results:
        device = result.get("device", "unknown device")
        if ceilings.get(device) is None:
            ceilings[device] = _result_ceilings(result)
    for device, c in ceilings.items():
        blocks += _device_section(device, c)
    blocks.append(("table", ["file", "device", "date", "torch", "triton", "rows"],
                   [[r["_file"], r.get("device", "?"), r.get("date", "?"), r.get("torch", "?"),
                     r.get("triton", "?"), str(len(r["rows"]))] for r in results]))

    representatives: dict[str, list[tuple[str, dict]]] = {}
    for result in results:
        device = result.get("device", "unknown device")
        c = _result_ceilings(result)
        blocks.append(("h2", f"{_family(result)} ({result['_file']})"))
        if result.get("notes"):
            blocks.append(("p", result["notes"]))
        groups: dict[tuple[str, str], list[dict]] = {}
        for row in result["rows"]:
            groups.setdefault((row["op"], row.get("dtype", "?")), []).append(row)
        for (op, dtype), rows in groups.items():
            section, representative = _op_section(result, op, dtype, rows, c, out_dir)
            blocks += section
            if representative is not None:
                representatives.setdefault(device, []).append((dtype, representative))
        if result.get("ncu"):
            blocks += [("h3", "Nsight Compute"),
                       ("table", *_dict_table(result["ncu"], ("op", "provider", "shape") + _NCU_KEYS))]
        if result.get("decode_us"):
            blocks += [("h3", "Decode-size calls (µs per call: CUDA graph replay, Python launch)"),
                       ("table", *_dict_table(result["decode_us"],
                                              ("op", "shape", "provider", "graph_us", "python_us")))]

    for device, reps in representatives.items():
        if ceilings.get(device) is not None:
            blocks += _roofline_section(device, ceilings[device], reps, out_dir)
    return blocks


def _is_number(cell: str) -> bool:
    return bool(re.match(r"^-?\d", cell))


_CSS = """body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #ccc;padding:3px 8px}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
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
                cells = "".join(f'<td class="num">{html.escape(x)}</td>' if _is_number(x)
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
