"""Results files: benchmarks/results/<device>-<yyyy-mm-dd>-<family>.json (DESIGN.md) plus a CSV twin."""
from __future__ import annotations

import csv
import datetime
import json
import re
from pathlib import Path

import torch

COLUMNS = ("op", "dtype", "shape", "provider", "ms", "GBps", "TFLOPs", "roofline_pct", "rel_err", "flops", "bytes")


def device_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower().replace("nvidia", "")).strip("-") or "cpu"


def results_path(folder: str | Path, device: str, family: str, date: str | None = None) -> Path:
    date = date or datetime.date.today().isoformat()
    return Path(folder) / f"{device_slug(device)}-{date}-{family}.json"


def write_results(folder: str | Path, family: str, rows: list[dict], ceilings: dict, device: str,
                  **extra) -> Path:
    """Write one family's rows (and optional extra top-level keys: ncu, decode_us, notes) as JSON + CSV."""
    import triton

    path = results_path(folder, device, family)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"device": device, "date": datetime.date.today().isoformat(), "torch": torch.__version__,
           "triton": triton.__version__, "ceilings": ceilings, "rows": rows, **extra}
    path.write_text(json.dumps(doc, indent=1))
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "shape": "x".join(map(str, row["shape"]))})
    return path
