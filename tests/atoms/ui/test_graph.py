"""The neighbourhood picture's maths and SVG (atoms/ui/graph.py): pure, no database."""

from __future__ import annotations

import itertools
import re

import pytest

from atoms.ui import graph
from atoms.ui.graph import Box, Edge, Graph, Label, Node, Point, fit, layout, render_svg, text_width, trimmed

CENTER = "atom:c"
# Labels that push the width estimate: wide capitals, CJK, emoji, and plain long words.
LONG = ["WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW", "日本語のテキストはとても長いです日本語のテキスト",
        "Alice takes her coffee black, no sugar, at 8am on weekdays", "🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀",
        "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"]


def center() -> Node:
    return Node(key=CENTER, label="The centre of it all, with a rather long text to cut", status="center")


def crowd(out_count: int, in_count: int, *, hidden_out: int = 0, hidden_in: int = 0, loop: bool = True) -> Graph:
    """A graph as reading.neighbourhood builds it: long labels, many roles, some links both ways."""
    outgoing = [Node(f"atom:o{i}", LONG[i % len(LONG)], "active", href=f"/o{i}/") for i in range(out_count)]
    incoming = [Node(f"atom:i{i}", LONG[(i + 2) % len(LONG)], "retired", href=f"/i{i}/") for i in range(in_count)]
    edges = [Edge(CENTER, n.key, ("condition", "about", "see-also-this-very-long-role"), i % 2 == 0)
             for i, n in enumerate(outgoing)]
    edges += [Edge(n.key, CENTER, ("member",), False) for n in outgoing[::3]]  # linked both ways
    edges += [Edge(n.key, CENTER, ("uses", "depends-on"), True) for n in incoming]
    if loop:
        edges.append(Edge(CENTER, CENTER, ("self",), False))
    return Graph(center=center(), outgoing=outgoing, incoming=incoming, edges=edges, hidden_out=hidden_out,
                 hidden_in=hidden_in)


def split(total: int) -> list[tuple[int, int]]:
    """The ways a reader's atom can have `total` neighbours: all out, all in, half each, lopsided."""
    return [(total, 0), (0, total), (total // 2, total - total // 2), (total - 3, 3)]


def test_the_module_imports_nothing_from_django():
    source = open(graph.__file__, encoding="utf-8").read()
    assert not re.search(r"^\s*(from|import)\s+(django|atoms\.models|tenants|memoryhub)", source, re.MULTILINE)


def test_the_current_atom_is_centred_between_the_columns():
    plan = layout(crowd(3, 2))
    assert plan.center.x == graph.WIDTH / 2
    assert {row.point.x for row in plan.rows if row.node.key.startswith("atom:o")} == {
        graph.WIDTH / 2 + graph.COLUMN_DX}
    assert {row.point.x for row in plan.rows if row.node.key.startswith("atom:i")} == {
        graph.WIDTH / 2 - graph.COLUMN_DX}


def test_rows_are_one_row_height_apart_and_centred_on_the_atom():
    plan = layout(crowd(5, 0))
    ys = [row.point.y for row in plan.rows]
    assert [b - a for a, b in itertools.pairwise(ys)] == pytest.approx([graph.ROW_H] * 4)
    assert ys[2] == pytest.approx(plan.center.y)


def test_the_picture_grows_with_the_longer_side_only():
    assert layout(crowd(1, 0, loop=False)).height == graph.MIN_HEIGHT
    tall = layout(crowd(10, 2)).height
    assert tall == graph.TOP + 10 * graph.ROW_H + graph.BOTTOM == layout(crowd(2, 10)).height


@pytest.mark.parametrize("total", [10, 12, 20, 40])
def test_no_label_overlaps_another_at_many_neighbours(total):
    for out_count, in_count in split(total):
        plan = layout(crowd(out_count, in_count))
        boxes = [(label.text, label.box) for label in plan.labels()]
        for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
            assert not a.overlaps(b), (out_count, in_count, ta, tb)


@pytest.mark.parametrize("total", [10, 20, 40])
def test_labels_stay_inside_the_picture_and_off_other_circles(total):
    for out_count, in_count in split(total):
        plan = layout(crowd(out_count, in_count))
        circles = [(plan.center, graph.CENTER_R, "")] + [(row.point, graph.NODE_R, row.node.key) for row in plan.rows]
        owner = {id(row.label): row.node.key for row in plan.rows} | {
            id(row.roles): row.node.key for row in plan.rows if row.roles}
        for label in plan.labels():
            box = label.box
            assert 0 <= box.x0 and box.x1 <= graph.WIDTH and 0 <= box.y0 and box.y1 <= plan.height, label.text
            for point, radius, key in circles:
                if owner.get(id(label)) != key:
                    assert box.distance_to(point) >= radius, (label.text, key)
        for a, b in itertools.combinations(circles, 2):
            assert a[0].distance(b[0]) >= a[1] + b[1] + 2


def test_a_crowded_side_ends_with_a_more_row_that_links_to_its_table():
    plan = layout(crowd(40, 15, hidden_in=3), more_out="#links-out", more_in="#links-in")
    out_rows = [row for row in plan.rows if row.point.x > plan.center.x]
    in_rows = [row for row in plan.rows if row.point.x < plan.center.x]
    assert len(out_rows) == len(in_rows) == graph.MAX_ROWS
    more_out, more_in = out_rows[-1].node, in_rows[-1].node
    assert (more_out.label, more_out.href, more_out.status) == ("+29 more", "#links-out", "more")
    assert (more_in.label, more_in.href) == ("+7 more", "#links-in")  # 4 cut here and 3 the caller left out
    assert "29 more links out" in more_out.title


def test_a_side_the_caller_cut_says_how_many_it_left_out():
    plan = layout(crowd(3, 0, hidden_out=5))
    assert [row.node.label for row in plan.rows][-1] == "+5 more"
    assert len(plan.rows) == 4


def test_a_side_that_fits_has_no_more_row():
    plan = layout(crowd(graph.MAX_ROWS, 0))
    assert len(plan.rows) == graph.MAX_ROWS and all(row.node.status != "more" for row in plan.rows)


def test_long_labels_are_cut_to_their_column_by_estimated_width():
    assert fit("a  b\nc", 100, 13) == "a b c"
    cut = fit("W" * 80, graph.column_width(), graph.LABEL_SIZE)
    assert cut.endswith("…") and text_width(cut, graph.LABEL_SIZE) <= graph.column_width()
    assert text_width("日本", 13) > text_width("ab", 13) and text_width("il", 13) < text_width("mw", 13)


def test_label_boxes_follow_their_anchor():
    start = Label("abc", 100, 50, 10, "start").box
    end = Label("abc", 100, 50, 10, "end").box
    middle = Label("abc", 100, 50, 10).box
    assert start.x0 == 100 and end.x1 == 100 and middle.x0 + middle.x1 == pytest.approx(200)
    assert start.y0 < 50 < start.y1
    assert not Box(0, 0, 10, 10).overlaps(Box(10, 0, 20, 10)) and Box(0, 0, 10, 10).overlaps(Box(9, 9, 20, 20))


def test_the_role_line_names_both_directions_of_a_mutual_link():
    plan = layout(Graph(center=center(), outgoing=[Node("atom:a", "A", "active", href="/a/")],
                        edges=[Edge(CENTER, "atom:a", ("x",), True), Edge("atom:a", CENTER, ("y", "z"), False)]))
    assert plan.rows[0].roles is not None and plan.rows[0].roles.text == "x (required) · back: y, z"


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


def test_the_svg_draws_required_links_solid_and_ordinary_links_dashed():
    picture = Graph(center=center(),
                    outgoing=[Node("atom:a", "A", "active", href="/a/"), Node("atom:b", "B", "retired", href="/b/")],
                    edges=[Edge(CENTER, "atom:a", ("condition",), True), Edge(CENTER, "atom:b", ("about",), False)])
    svg = render_svg(picture, title="t", description="d")
    assert svg.startswith('<svg class="atom-graph"') and svg.endswith("</svg>")
    assert '<g class="edge required"><title>condition (required)</title>' in svg
    assert 'marker-end="url(#arrow-required)"' in svg and 'marker-end="url(#arrow-ordinary)"' in svg
    assert '<g class="edge ordinary"><title>about</title>' in svg
    assert '<a href="/a/" class="node active"' in svg and '<a href="/b/" class="node retired"' in svg
    assert svg.count("<circle") == 3


def test_a_cut_label_keeps_its_full_text_in_a_tooltip():
    text = "Alice takes her coffee black, no sugar, at 8am on weekdays and oat milk at the weekend"
    picture = Graph(center=center(), outgoing=[Node("atom:a", text, "active", href="/a/", title=text)],
                    edges=[Edge(CENTER, "atom:a", ("about",), False)])
    svg = render_svg(picture, title="t", description="d")
    assert f"<title>{text}</title>" in svg
    shown = re.findall(r'text-anchor="start">([^<]*)</text>', svg)
    assert shown[0].endswith("…") and text.startswith(shown[0][:-1])


def test_the_svg_renders_the_more_rows_as_links_and_draws_no_edge_to_cut_neighbours():
    svg = render_svg(crowd(20, 0, loop=False), title="t", description="d")
    assert '<a href="#out-h" class="node more"' in svg and ">+9 more</text>" in svg
    # The 11 drawn neighbours' links and the 4 links back among them (every third links back).
    assert len(re.findall(r'<g class="edge (?:required|ordinary)">', svg)) == graph.MAX_PER_SIDE + 4
    assert svg.count("<circle") == 1 + graph.MAX_ROWS


def test_nothing_in_the_svg_is_styled_inline():
    svg = render_svg(crowd(40, 40), title="t", description="d")
    assert "style=" not in svg


def test_every_text_in_the_svg_is_escaped():
    evil = '<script>alert("x")</script>'
    picture = Graph(center=Node(CENTER, evil, "center", title=evil),
                    outgoing=[Node("atom:a", evil, "active", href='/a/?x="1"&y=<2>')],
                    edges=[Edge(CENTER, "atom:a", (evil,), False)])
    svg = render_svg(picture, title=evil, description=evil)
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg and 'href="/a/?x=&quot;1&quot;&amp;y=&lt;2&gt;"' in svg


def test_unavailable_targets_are_drawn_without_a_link():
    picture = Graph(center=center(), outgoing=[Node("unavailable:atom:x", "purged", "unavailable")],
                    edges=[Edge(CENTER, "unavailable:atom:x", ("about",), True)])
    svg = render_svg(picture, title="t", description="d")
    assert '<g class="node unavailable" role="img"' in svg and svg.count("<a ") == 0


def test_a_self_link_is_a_loop_over_the_centre_and_mutual_links_are_two_curves():
    picture = Graph(center=center(), outgoing=[Node("atom:a", "A", "active", href="/a/")],
                    edges=[Edge(CENTER, CENTER, ("self",), False), Edge(CENTER, "atom:a", ("x",), False),
                           Edge("atom:a", CENTER, ("y",), True)])
    plan = layout(picture)
    svg = render_svg(picture, title="t", description="d")
    assert "(to itself)" in svg and " C" in svg and plan.loop_label is not None
    controls = re.findall(r'd="M[\d.]+,[\d.]+ Q([\d.]+),([\d.]+)', svg)
    assert len(controls) == 2 and all(float(y) != pytest.approx(plan.center.y) for _, y in controls)


def test_an_empty_graph_says_so():
    assert Graph(center=center()).empty
    assert not Graph(center=center(), hidden_in=1).empty
    assert not crowd(1, 0, loop=False).empty


def test_labels_are_shortened_on_one_line():
    assert graph.short("a  b\nc", 10) == "a b c"
    assert graph.short("x" * 30, 10) == "x" * 9 + "…"
