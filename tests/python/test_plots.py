"""The SVG charts: valid XML, bars proportional to the bytes they show, one
box per traced event."""

import xml.etree.ElementTree as ET

from zerosbp.plots import memory_by_role_svg, timeline_svg

SVG = "{http://www.w3.org/2000/svg}"
MIB = 1024 * 1024


def rects(svg, cls):
    root = ET.fromstring(svg)
    return [r for r in root.iter(SVG + "rect")
            if cls in r.get("class", "").split()]


def test_memory_bars_are_proportional_and_stacked():
    rows = [("stage 0", {"param": 4 * MIB, "grad": 4 * MIB,
                         "opt_state": 8 * MIB, "activation": 2 * MIB}),
            ("stage 3", {"param": 1 * MIB, "grad": 1 * MIB,
                         "opt_state": 2 * MIB, "activation": 2 * MIB})]
    svg = memory_by_role_svg(rows)
    bars = rects(svg, "bar")
    assert len(bars) == 8
    heights = [float(r.get("height")) for r in bars]
    # The same scale for every bar: height / MiB is constant.
    per_mib = heights[0] / 4
    expected = [4, 4, 8, 2, 1, 1, 2, 2]
    for height, mib in zip(heights, expected):
        assert abs(height - mib * per_mib) < 0.02
    # Stacked: each bar starts where the one below it ends.
    for below, above in zip(bars[:3], bars[1:4]):
        assert abs(float(above.get("y")) + float(above.get("height")) -
                   float(below.get("y"))) < 0.02
    assert "18.0" in svg and "6.0" in svg  # totals above the bars


def test_zero_roles_draw_nothing():
    bars = rects(memory_by_role_svg([("s", {"param": MIB, "grad": 0})]),
                 "bar")
    assert [b.get("class") for b in bars] == ["bar param"]


def test_timeline_has_a_box_per_event_at_its_time():
    events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {}}]
    for rank in (0, 1):
        events += [
            {"ph": "X", "pid": rank, "tid": 0, "name": "nn.matmul",
             "cat": "forward", "ts": 0.0, "dur": 500.0},
            {"ph": "X", "pid": rank, "tid": 0, "name": "sbp.collective_wait",
             "cat": "wait", "ts": 600.0, "dur": 400.0},
            {"ph": "X", "pid": rank, "tid": 1, "name": "shard.all_gather",
             "cat": "collective", "ts": 500.0, "dur": 500.0},
        ]
    svg = timeline_svg({"traceEvents": events})
    boxes = rects(svg, "event")
    assert len(boxes) == 6
    forward = [b for b in boxes if "forward" in b.get("class")]
    gather = [b for b in boxes if "collective" in b.get("class")]
    # The step lasts 1000 us: the matmul and the gather each take half.
    assert abs(float(forward[0].get("width")) -
               float(gather[0].get("width"))) < 0.02
    assert abs(float(gather[0].get("x")) - (float(forward[0].get("x")) +
                                            float(forward[0].get("width")))) \
        < 0.02
    assert "rank 1 comm" in svg
