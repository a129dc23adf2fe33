"""SVG charts of what a run measured, written directly (no plotting library).

- ``memory_by_role_svg(rows)``: per-rank peak bytes by role, one stacked bar
  per configuration (the ZeRO paper's Figure 1, from measured numbers).
- ``timeline_svg(trace)``: one step's compute and communication streams per
  rank, from ``nn.Graph.trace_step`` or ``zero-run --trace`` (Chrome
  trace-event JSON), to see what communication overlaps.
"""

import math
from xml.sax.saxutils import escape

MIB = 1024.0 * 1024.0

# Roles in stacking order (model states first, as in the paper's figure).
ROLE_COLORS = [
    ("param", "#4c72b0"),
    ("grad", "#dd8452"),
    ("master", "#8172b3"),
    ("opt_state", "#55a868"),
    ("comm_buffer", "#da8bc3"),
    ("activation", "#c7c7c7"),
    ("input", "#937860"),
]

CATEGORY_COLORS = {
    "forward": "#4c72b0",
    "backward": "#55a868",
    "optimizer": "#dd8452",
    "wait": "#c44e52",
    "collective": "#8172b3",
}


def _svg(width, height, body):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" '
            'font-family="sans-serif" font-size="12">\n'
            f'<rect width="{width}" height="{height}" fill="white"/>\n'
            + "\n".join(body) + "\n</svg>\n")


def _text(x, y, text, anchor="start", size=12, weight="normal"):
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" '
            f'font-size="{size}" font-weight="{weight}">{escape(text)}</text>')


def _rect(x, y, w, h, color, title=None, cls=None):
    klass = f' class="{cls}"' if cls else ""
    tip = f"<title>{escape(title)}</title>" if title else ""
    return (f'<rect{klass} x="{x:.2f}" y="{y:.2f}" width="{max(w, 0.0):.2f}" '
            f'height="{max(h, 0.0):.2f}" fill="{color}">{tip}</rect>')


def _nice_step(top, ticks=5):
    """A round axis step (1, 2 or 5 times a power of ten) for [0, top]."""
    if top <= 0:
        return 1.0
    raw = top / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5):
        if power * factor >= raw:
            return power * factor
    return power * 10


def memory_by_role_svg(rows, title="Peak memory per rank by role"):
    """rows: [(label, {role: bytes})]. One stacked bar per row, in MiB; the
    total is printed above each bar."""
    width, height = 140 + 110 * max(len(rows), 1) + 150, 380
    left, top, bottom = 70, 40, 320
    totals = [sum(by_role.get(r, 0) for r, _ in ROLE_COLORS) / MIB
              for _, by_role in rows]
    peak = max(totals + [1e-9])
    step = _nice_step(peak)
    scale_top = step * (int(peak / step) + 1)
    scale = (bottom - top) / scale_top
    body = [_text(width / 2, 22, title, "middle", 14, "bold")]
    tick = 0.0
    while tick <= scale_top + 1e-9:
        y = bottom - tick * scale
        body.append(f'<line x1="{left}" x2="{left + 110 * len(rows) + 20}" '
                    f'y1="{y:.1f}" y2="{y:.1f}" stroke="#e0e0e0"/>')
        body.append(_text(left - 6, y + 4, f"{tick:g}", "end"))
        tick += step
    body.append(_text(16, (top + bottom) / 2, "MiB", "middle"))
    for index, (label, by_role) in enumerate(rows):
        x = left + 20 + 110 * index
        y = bottom
        for role, color in ROLE_COLORS:
            value = by_role.get(role, 0) / MIB
            if value <= 0:
                continue
            h = value * scale
            y -= h
            body.append(_rect(x, y, 70, h, color, f"{label} {role}: "
                              f"{value:.2f} MiB", cls=f"bar {role}"))
        body.append(_text(x + 35, y - 5, f"{totals[index]:.1f}", "middle"))
        body.append(_text(x + 35, bottom + 18, label, "middle"))
    legend_x = left + 110 * len(rows) + 40
    for i, (role, color) in enumerate(ROLE_COLORS):
        body.append(_rect(legend_x, top + 20 * i, 12, 12, color))
        body.append(_text(legend_x + 18, top + 20 * i + 11, role))
    return _svg(width, height, body)


def timeline_svg(trace, title="One training step: compute and communication"):
    """trace: Chrome trace-event JSON (a dict with traceEvents). Two lanes per
    rank; boxes coloured by category, time in ms from the step's start."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    ranks = sorted({e["pid"] for e in events})
    end_us = max([e["ts"] + e["dur"] for e in events] + [1.0])
    left, right, top, lane = 130, 30, 44, 22
    width = 1100
    height = top + len(ranks) * (2 * lane + 14) + 70
    plot_width = width - left - right
    scale = plot_width / end_us
    body = [_text(width / 2, 22, title, "middle", 14, "bold")]
    step = _nice_step(end_us / 1000.0, 8)
    tick = 0.0
    axis_y = top + len(ranks) * (2 * lane + 14)
    while tick * 1000.0 <= end_us + 1e-6:
        x = left + tick * 1000.0 * scale
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" '
                    f'y2="{axis_y}" stroke="#eeeeee"/>')
        body.append(_text(x, axis_y + 14, f"{tick:g}", "middle"))
        tick += step
    body.append(_text(left + plot_width / 2, axis_y + 30, "ms", "middle"))
    for row, rank in enumerate(ranks):
        base = top + row * (2 * lane + 14)
        for tid, name in ((0, "compute"), (1, "comm")):
            y = base + tid * lane
            body.append(_text(left - 8, y + 15, f"rank {rank} {name}", "end"))
            for e in events:
                if e["pid"] != rank or e.get("tid", 0) != tid:
                    continue
                color = CATEGORY_COLORS.get(e.get("cat"), "#999999")
                body.append(_rect(
                    left + e["ts"] * scale, y + 2, e["dur"] * scale,
                    lane - 4, color,
                    f"{e['name']} ({e.get('cat')}) {e['dur'] / 1000.0:.3f} ms",
                    cls=f"event {e.get('cat')}"))
    legend_y = axis_y + 44
    for i, (category, color) in enumerate(CATEGORY_COLORS.items()):
        x = left + 130 * i
        body.append(_rect(x, legend_y, 12, 12, color))
        body.append(_text(x + 18, legend_y + 11, category))
    return _svg(width, height + 10, body)
