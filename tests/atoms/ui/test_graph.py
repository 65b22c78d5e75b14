"""The neighbourhood picture's maths and SVG (atoms/ui/graph.py): pure, no database."""

from __future__ import annotations

import itertools
import math
import re

import pytest

from atoms.ui import graph
from atoms.ui.graph import Edge, Graph, Node, Point, layout, render_svg, side_angles, trimmed


def keys(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def test_the_module_imports_nothing_from_django():
    source = open(graph.__file__, encoding="utf-8").read()
    assert not re.search(r"^\s*(from|import)\s+(django|atoms\.models|tenants|memoryhub)", source, re.MULTILINE)


def test_the_current_atom_is_centred():
    positions = layout(keys("o", 3), keys("i", 2))
    assert positions[""] == Point(graph.WIDTH / 2, graph.HEIGHT / 2)


def test_links_out_sit_on_the_right_and_links_in_on_the_left():
    positions = layout(keys("o", 8), keys("i", 8))
    center = positions[""]
    assert all(positions[k].x > center.x for k in keys("o", 8))
    assert all(positions[k].x < center.x for k in keys("i", 8))


def test_a_single_neighbour_sits_level_with_the_centre():
    positions = layout(["only"], [])
    assert positions["only"].y == pytest.approx(graph.HEIGHT / 2)
    assert positions["only"].x == pytest.approx(graph.WIDTH / 2 + graph.RX)


def test_angles_spread_evenly_and_mirror_between_the_sides():
    right = side_angles(4, right=True)
    steps = [b - a for a, b in itertools.pairwise(right)]
    assert steps == pytest.approx([steps[0]] * 3)
    assert [math.pi - a for a in right] == pytest.approx(side_angles(4, right=False))
    assert side_angles(0, right=True) == []


def test_a_crowded_side_alternates_between_two_rings():
    center = Point(graph.WIDTH / 2, graph.HEIGHT / 2)
    few = graph.side_points(graph.RING_SWITCH, center, right=True)
    assert all(p.x - center.x == pytest.approx(graph.RX * math.cos(a)) for p, a in
               zip(few, side_angles(graph.RING_SWITCH, right=True), strict=True))
    many = graph.side_points(graph.RING_SWITCH + 1, center, right=True)
    outer = [p for i, p in enumerate(many) if i % 2 == 0]
    inner = [p for i, p in enumerate(many) if i % 2 == 1]
    assert all(center.distance(p) > center.distance(q) for p, q in zip(outer, inner, strict=False))


@pytest.mark.parametrize("out_count", range(graph.MAX_PER_SIDE + 1))
def test_no_two_nodes_or_labels_overlap_and_everything_stays_inside(out_count):
    for in_count in range(graph.MAX_PER_SIDE + 1):
        positions = layout(keys("o", out_count), keys("i", in_count))
        radius = {k: graph.CENTER_R if k == "" else graph.NODE_R for k in positions}
        label_w = 7.2 * graph.LABEL_CHARS  # 13px text
        labels = {k: (p.x - label_w / 2, p.y + radius[k] + 3, p.x + label_w / 2, p.y + radius[k] + 18)
                  for k, p in positions.items()}
        for (ka, a), (kb, b) in itertools.combinations(positions.items(), 2):
            assert a.distance(b) >= radius[ka] + radius[kb] + 2, (out_count, in_count, ka, kb)
            la, lb = labels[ka], labels[kb]
            assert la[2] <= lb[0] or lb[2] <= la[0] or la[3] <= lb[1] or lb[3] <= la[1], (ka, kb)
        for key, (x0, y0, x1, y1) in labels.items():
            p = positions[key]
            assert 0 <= x0 and x1 <= graph.WIDTH and y1 <= graph.HEIGHT and p.y - radius[key] >= 24, key
            for other, q in positions.items():
                if other != key:  # a label never runs into another node's circle
                    nearest = Point(min(max(q.x, x0), x1), min(max(q.y, y0), y1))
                    assert nearest.distance(q) >= radius[other], (key, other)


def test_edges_stop_at_the_rims_of_both_circles():
    start, end = trimmed(Point(0, 0), Point(100, 0), 30, 20)
    assert (start, end) == (Point(30, 0), Point(80, 0))
    touching = trimmed(Point(0, 0), Point(10, 0), 30, 20)
    assert touching == (Point(0, 0), Point(10, 0))


def test_a_bent_edge_bulges_to_one_side_and_a_straight_one_does_not():
    straight = graph.curve_control(Point(0, 0), Point(100, 0), 0)
    assert straight == Point(50, 0)
    there = graph.curve_control(Point(0, 0), Point(100, 0), 20)
    back = graph.curve_control(Point(100, 0), Point(0, 0), 20)
    assert there.y == -back.y != 0


def center() -> Node:
    return Node(key="atom:c", label="The centre", status="center")


def test_the_svg_draws_required_links_solid_and_ordinary_links_dashed():
    picture = Graph(center=center(),
                    outgoing=[Node("atom:a", "A", "active", href="/a/"), Node("atom:b", "B", "retired", href="/b/")],
                    edges=[Edge("atom:c", "atom:a", ("condition",), True), Edge("atom:c", "atom:b", ("about",), False)])
    svg = render_svg(picture, title="t", description="d")
    assert svg.startswith('<svg class="atom-graph"') and svg.endswith("</svg>")
    assert '<g class="edge required"><title>condition (required)</title>' in svg
    assert 'marker-end="url(#arrow-required)"' in svg and 'marker-end="url(#arrow-ordinary)"' in svg
    assert '<g class="edge ordinary"><title>about</title>' in svg
    assert '<a href="/a/" class="node active"' in svg and '<a href="/b/" class="node retired"' in svg
    assert svg.count("<circle") == 3


def test_every_text_in_the_svg_is_escaped():
    evil = '<script>alert("x")</script>'
    picture = Graph(center=Node("atom:c", evil, "center", title=evil),
                    outgoing=[Node("atom:a", evil, "active", href='/a/?x="1"&y=<2>')],
                    edges=[Edge("atom:c", "atom:a", (evil,), False)])
    svg = render_svg(picture, title=evil, description=evil)
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg and 'href="/a/?x=&quot;1&quot;&amp;y=&lt;2&gt;"' in svg


def test_unavailable_targets_are_drawn_without_a_link():
    picture = Graph(center=center(), outgoing=[Node("unavailable:atom:x", "purged", "unavailable")],
                    edges=[Edge("atom:c", "unavailable:atom:x", ("about",), True)])
    svg = render_svg(picture, title="t", description="d")
    assert '<g class="node unavailable" role="img"' in svg and svg.count("<a ") == 0


def test_a_self_link_is_a_loop_over_the_centre_and_mutual_links_are_two_curves():
    picture = Graph(center=center(), outgoing=[Node("atom:a", "A", "active", href="/a/")],
                    edges=[Edge("atom:c", "atom:c", ("self",), False), Edge("atom:c", "atom:a", ("x",), False),
                           Edge("atom:a", "atom:c", ("y",), True)])
    svg = render_svg(picture, title="t", description="d")
    assert "(to itself)" in svg and " C" in svg
    controls = re.findall(r'd="M[\d.]+,[\d.]+ Q([\d.]+),([\d.]+)', svg)
    assert len(controls) == 2 and all(float(y) != graph.HEIGHT / 2 for _, y in controls)


def test_labels_are_shortened_on_one_line():
    assert graph.short("a  b\nc", 10) == "a b c"
    assert graph.short("x" * 30, 10) == "x" * 9 + "…"
