"""Curves of results rows: a metric (GB/s, TFLOP/s) against one shape entry, one line per provider."""

from __future__ import annotations

from pathlib import Path

# Which shape entry each x_key names.
SHAPE_INDEX = {"N": -1, "M": 0, "S": 2}
_AXIS_LABEL = {"N": "N (last dim)", "M": "M (first dim)", "S": "S (sequence length)"}
_METRIC_LABEL = {"GBps": "GB/s", "TFLOPs": "TFLOP/s"}


def size_label(x: int) -> str:
    """512, 1K, 64K, 1M: binary multiples shortened, anything else as is."""
    if x >= 2**20 and x % 2**20 == 0:
        return f"{x // 2**20}M"
    if x >= 2**10 and x % 2**10 == 0:
        return f"{x // 2**10}K"
    return str(x)


def plot_curves(rows: list[dict], path, *, metric: str = "GBps", x_key: str = "N",
                ceiling: float | None = None, ceiling_label: str | None = None,
                title: str | None = None, logx: bool = True) -> Path:
    """Plot `metric` of results rows against shape[x_key], one line per provider; returns path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if x_key not in SHAPE_INDEX:
        raise ValueError(f"plot_curves: x_key={x_key!r} must be one of {list(SHAPE_INDEX)}")
    points = [r for r in rows if r.get(metric) is not None]
    if not points:
        raise ValueError(f"plot_curves: no row has a value for metric={metric!r}")

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for provider in dict.fromkeys(r["provider"] for r in points):
        mine = sorted((r["shape"][SHAPE_INDEX[x_key]], r[metric]) for r in points if r["provider"] == provider)
        bold = provider == "rooftop"
        ax.plot([x for x, _ in mine], [y for _, y in mine], marker="o", markersize=5 if bold else 4,
                linewidth=2.6 if bold else 1.3, zorder=3 if bold else 2, label=provider)
    if ceiling is not None:
        ax.axhline(ceiling, color="black", linestyle="--", linewidth=1,
                   label=ceiling_label or f"ceiling {ceiling:.0f}")

    sizes = sorted({r["shape"][SHAPE_INDEX[x_key]] for r in points})
    if logx:
        ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(x) for x in sizes], rotation=45 if len(sizes) > 8 else 0)
    ax.minorticks_off()
    top = max([r[metric] for r in points] + ([ceiling] if ceiling is not None else []))
    ax.set_ylim(0, top * 1.1)
    ax.set_xlabel(_AXIS_LABEL[x_key])
    ax.set_ylabel(_METRIC_LABEL.get(metric, metric))
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
