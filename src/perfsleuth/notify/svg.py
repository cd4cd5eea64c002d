"""A tiny SVG sparkline for alerts: a line, optional reference lines and a shaded stretch.

No plotting library: mail clients get a few hundred bytes of SVG inline. Non-finite values
break the line (a gap in the data).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["sparkline"]


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def sparkline(
    values: Sequence[float],
    *,
    width: int = 240,
    height: int = 48,
    marks: Sequence[float] = (),
    highlight: tuple[int, int] | None = None,
    label: str = "",
    color: str = "#2563eb",
) -> str:
    """An ``<svg>`` element drawing ``values`` left to right.

    Parameters
    ----------
    marks
        Horizontal reference lines (same units as ``values``), e.g. a loop band or a cap.
    highlight
        ``(first, last)`` indices to shade: where the finding is.
    label
        Accessible title (escaped).
    """
    finite = [v for v in values if math.isfinite(v)]
    if width < 10 or height < 10:
        raise ValueError("a sparkline needs at least 10 x 10 pixels")
    title = f"<title>{escape(label)}</title>" if label else ""
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">{title}'
        f'<rect width="{width}" height="{height}" fill="#f8fafc"/>'
    )
    if not finite:
        return head + "</svg>"
    low = min([*finite, *marks, 0.0])
    high = max([*finite, *marks])
    span = high - low or 1.0
    pad = 3.0
    n = len(values)

    def x(i: float) -> float:
        return pad + (width - 2 * pad) * (i / (n - 1) if n > 1 else 0.5)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * (v - low) / span

    parts = [head]
    if highlight is not None and n:
        a, b = max(0, highlight[0]), min(n - 1, highlight[1])
        left, right = x(a - 0.5 if a > 0 else a), x(b + 0.5 if b < n - 1 else b)
        parts.append(
            f'<rect x="{_fmt(left)}" y="0" width="{_fmt(max(right - left, 1.0))}" '
            f'height="{height}" fill="#fde68a" opacity="0.6"/>'
        )
    for mark in marks:
        parts.append(
            f'<line x1="{_fmt(pad)}" x2="{_fmt(width - pad)}" y1="{_fmt(y(mark))}" '
            f'y2="{_fmt(y(mark))}" stroke="#dc2626" stroke-width="1" stroke-dasharray="3 2"/>'
        )
    runs: list[list[str]] = [[]]
    for i, v in enumerate(values):
        if math.isfinite(v):
            runs[-1].append(f"{_fmt(x(i))},{_fmt(y(v))}")
        elif runs[-1]:
            runs.append([])
    for run in runs:
        if len(run) == 1:
            cx, cy = run[0].split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="1.5" fill="{escape(color)}"/>')
        elif run:
            parts.append(
                f'<polyline points="{" ".join(run)}" fill="none" stroke="{escape(color)}" '
                'stroke-width="1.5"/>'
            )
    parts.append("</svg>")
    return "".join(parts)
