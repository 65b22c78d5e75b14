"""The neighbourhood picture on an atom's page: layout maths and SVG, in pure Python.

No Django here (and no JS library in the page): the detail view hands over plain nodes and
edges, gets back an SVG string. The layout is three columns: the current atom in the middle,
the atoms linking to it in a column on the left, the atoms it links to in a column on the
right, so the reading direction says which way a link goes before the arrowheads do. Each
neighbour is one row: a circle, its label beside it (away from the centre) and, under the
label, the roles of its links. Rows are a fixed height apart and every label is cut to its
column's width by an over-estimate of its rendered width, so no two labels can overlap however
many neighbours there are (docs/atoms.md "Review UI"). A side with more neighbours than
MAX_ROWS shows the first ones and a "+N more" row that links to its table below the picture.
Every node but the centre and unavailable targets is a real link to that atom's page, and
every cut label carries the full text in its `<title>` tooltip.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

WIDTH = 720
TOP = 44  # the first row's band starts under the "links in" / "links out" headings
BOTTOM = 12
ROW_H = 38  # a label line and a role line, with a gap to the next row
NODE_R = 9
CENTER_R = 22
COLUMN_DX = 116  # the neighbour columns sit this far left and right of the centre
LABEL_GAP = 6  # between a circle and its label
MARGIN = 6  # between a label and the picture's edge
LOOP_ROOM = 64  # above the centre: a self-link's loop and its role
MIN_HEIGHT = 2 * (CENTER_R + LOOP_ROOM) + TOP
MAX_ROWS = 12  # per side, the "+N more" row included
MAX_PER_SIDE = MAX_ROWS - 1  # neighbours drawn per side (the caller may stop collecting there)
LABEL_SIZE = 13.0  # px, as in static/css/atoms.css
ROLE_SIZE = 11.5
HEADING_SIZE = 12.0
CENTER_WEIGHT = 1.12  # the centre's label is bold: wider glyphs
ROLE_CHARS = 24  # a self-link's role, over the loop
# Text boxes relative to the baseline, in em: DejaVu Sans (Debian's default sans) reaches
# 0.93 em up and 0.24 em down; other sans faces stay inside that.
ASCENT = 0.95
DESCENT = 0.25


@dataclass(frozen=True)
class Point:
    x: float
    y: float

    def distance(self, other: Point) -> float:
        return math.hypot(self.x - other.x, self.y - other.y)


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1

    def distance_to(self, point: Point) -> float:
        nearest = Point(min(max(point.x, self.x0), self.x1), min(max(point.y, self.y0), self.y1))
        return nearest.distance(point)


@dataclass(frozen=True)
class Node:
    """`status`: center, active, retired, unreviewed, quarantined or unavailable."""

    key: str
    label: str
    status: str
    href: str | None = None
    title: str = ""


@dataclass(frozen=True)
class Edge:
    """One drawn line: all links between the same two atoms in one direction, merged."""

    source: str
    target: str
    roles: tuple[str, ...]
    required: bool


@dataclass
class Graph:
    center: Node
    outgoing: list[Node] = field(default_factory=list)
    incoming: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    hidden_out: int = 0  # neighbours the caller left out of `outgoing` (listed in the tables)
    hidden_in: int = 0

    @property
    def hidden(self) -> int:
        return self.hidden_out + self.hidden_in

    @property
    def empty(self) -> bool:
        return not self.outgoing and not self.incoming and not self.hidden and not self.edges


def char_width(char: str) -> float:
    """An over-estimate of one character's advance, in em, in a common sans face."""
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return 1.0 if unicodedata.category(char) != "So" else 1.3  # CJK, emoji
    if unicodedata.category(char).startswith(("M", "C")):
        return 0.0 if unicodedata.category(char).startswith("M") else 0.6
    if char in "iIjlJ.,:;'!|`":
        return 0.34
    if char in " ftr()[]{}\"/\\-":
        return 0.48
    if char in "mMW@%&…—" or unicodedata.category(char) == "So":
        return 1.06
    if char in "wGOQDHNUCR":
        return 0.86
    if char.isupper():
        return 0.78
    return 0.62 if char.isascii() else 0.84


def text_width(text: str, size: float, weight: float = 1.0) -> float:
    return sum(char_width(c) for c in text) * size * weight


def fit(text: str, max_width: float, size: float, weight: float = 1.0) -> str:
    """`text` on one line, cut with "…" so that its estimated width stays within `max_width`."""
    flat = " ".join(text.split())
    if text_width(flat, size, weight) <= max_width:
        return flat
    room = max_width - text_width("…", size, weight)
    used, kept = 0.0, []
    for char in flat:
        used += char_width(char) * size * weight
        if used > room:
            break
        kept.append(char)
    return "".join(kept).rstrip() + "…"


def short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Label:
    text: str
    x: float
    y: float  # baseline
    size: float
    anchor: str = "middle"  # start | middle | end
    css: str = ""
    weight: float = 1.0

    @property
    def box(self) -> Box:
        width = text_width(self.text, self.size, self.weight)
        x0 = {"start": self.x, "middle": self.x - width / 2, "end": self.x - width}[self.anchor]
        return Box(x0, self.y - ASCENT * self.size, x0 + width, self.y + DESCENT * self.size)


@dataclass(frozen=True)
class Row:
    """One neighbour (or a side's "+N more") as drawn."""

    node: Node
    point: Point
    label: Label
    roles: Label | None


@dataclass
class Layout:
    height: float
    center: Point
    center_label: Label
    rows: list[Row]
    headings: list[Label]
    loop_label: Label | None = None

    @property
    def points(self) -> dict[str, Point]:
        return {"": self.center, **{row.node.key: row.point for row in self.rows}}

    def labels(self) -> list[Label]:
        extra = [self.loop_label] if self.loop_label else []
        return [*self.headings, self.center_label, *extra,
                *(label for row in self.rows for label in (row.label, row.roles) if label)]


def column_width() -> float:
    """Room for a neighbour's label: from beside its circle to the picture's edge."""
    return WIDTH / 2 - COLUMN_DX - NODE_R - LABEL_GAP - MARGIN


def center_width() -> float:
    """Room for the centre's label: between the two columns' circles."""
    return 2 * (COLUMN_DX - NODE_R - LABEL_GAP)


def picture_height(rows: int) -> float:
    return max(MIN_HEIGHT, TOP + rows * ROW_H + BOTTOM)


def more_node(count: int, *, right: bool, href: str) -> Node:
    side = "links out" if right else "links in"
    return Node(key=f"more:{'out' if right else 'in'}", label=f"+{count} more", status="more", href=href,
                title=f"{count} more {side}: see the table below")


def _roles_text(key: str, edges: Sequence[Edge], center: str, *, right: bool) -> str:
    """The row's role line: the roles towards the neighbour's side first, then the other way."""
    there = [e for e in edges if e.source == center and e.target == key]
    back = [e for e in edges if e.source == key and e.target == center]
    first, second = (there, back) if right else (back, there)
    parts = [", ".join(e.roles) + (" (required)" if e.required else "") for e in first]
    parts += ["back: " + ", ".join(e.roles) + (" (required)" if e.required else "") for e in second]
    return " · ".join(parts)


def _side(nodes: Sequence[Node], hidden: int, *, right: bool, href: str) -> list[Node]:
    """The nodes one side draws: at most MAX_ROWS rows, the last one "+N more" when cut."""
    if not hidden and len(nodes) <= MAX_ROWS:
        return list(nodes)
    shown = list(nodes[: MAX_ROWS - 1])
    return [*shown, more_node(len(nodes) - len(shown) + hidden, right=right, href=href)]


def layout(graph: Graph, *, more_out: str = "#out-h", more_in: str = "#in-h") -> Layout:
    """Where everything goes; `more_out` / `more_in` are the hrefs of the "+N more" rows."""
    sides = (_side(graph.outgoing, graph.hidden_out, right=True, href=more_out),
             _side(graph.incoming, graph.hidden_in, right=False, href=more_in))
    height = picture_height(max(len(sides[0]), len(sides[1]), 1))
    center = Point(WIDTH / 2, TOP + (height - TOP - BOTTOM) / 2)
    rows = []
    for nodes, right in ((sides[0], True), (sides[1], False)):
        x = center.x + COLUMN_DX if right else center.x - COLUMN_DX
        text_x = x + NODE_R + LABEL_GAP if right else x - NODE_R - LABEL_GAP
        anchor = "start" if right else "end"
        first_y = center.y - (len(nodes) - 1) * ROW_H / 2
        for i, node in enumerate(nodes):
            y = first_y + i * ROW_H
            label = Label(fit(node.label, column_width(), LABEL_SIZE), text_x, y + 4, LABEL_SIZE, anchor)
            roles_text = fit(_roles_text(node.key, graph.edges, graph.center.key, right=right), column_width(),
                             ROLE_SIZE)
            roles = Label(roles_text, text_x, y + 20, ROLE_SIZE, anchor, "role") if roles_text else None
            rows.append(Row(node, Point(x, y), label, roles))
    center_label = Label(fit(graph.center.label, center_width(), LABEL_SIZE, CENTER_WEIGHT), center.x,
                         center.y + CENTER_R + 17, LABEL_SIZE, weight=CENTER_WEIGHT, css="center")
    loops = [e for e in graph.edges if e.source == e.target == graph.center.key]
    loop_label = None
    if loops:
        text = short(", ".join(role for e in loops for role in e.roles), ROLE_CHARS)
        loop_label = Label(text, center.x, center.y - CENTER_R - 42, ROLE_SIZE, css="role")
    headings = [Label("links in", MARGIN, 18, HEADING_SIZE, "start", "side"),
                Label("links out", WIDTH - MARGIN, 18, HEADING_SIZE, "end", "side")]
    return Layout(height=height, center=center, center_label=center_label, rows=rows, headings=headings,
                  loop_label=loop_label)


def trimmed(start: Point, end: Point, start_r: float, end_r: float) -> tuple[Point, Point]:
    """The segment between two circles' rims, so arrowheads touch the target's edge."""
    length = start.distance(end)
    if length <= start_r + end_r:
        return start, end
    ux, uy = (end.x - start.x) / length, (end.y - start.y) / length
    return (Point(start.x + ux * start_r, start.y + uy * start_r),
            Point(end.x - ux * end_r, end.y - uy * end_r))


def curve_control(start: Point, end: Point, bend: float) -> Point:
    """The quadratic control point `bend` pixels off the chord's midpoint (to the left of
    the direction of travel), so two opposite links between one pair do not overlap."""
    mid = Point((start.x + end.x) / 2, (start.y + end.y) / 2)
    length = start.distance(end) or 1.0
    nx, ny = (end.y - start.y) / length, -(end.x - start.x) / length
    return Point(mid.x + nx * bend, mid.y + ny * bend)


def _n(value: float) -> str:
    return f"{value:.1f}"


def _text(label: Label) -> str:
    css = f' class="{label.css}"' if label.css else ""
    return (f'<text x="{_n(label.x)}" y="{_n(label.y)}" text-anchor="{label.anchor}"{css}>'
            f"{escape(label.text)}</text>")


def _edge_svg(edge: Edge, points: dict[str, Point], keys: dict[str, str], bent: bool) -> str:
    a, b = points[keys[edge.source]], points[keys[edge.target]]
    ra = CENTER_R if keys[edge.source] == "" else NODE_R
    rb = CENTER_R if keys[edge.target] == "" else NODE_R
    start, end = trimmed(a, b, ra, rb + 2)
    control = curve_control(start, end, 16 if bent else 0)
    kind = "required" if edge.required else "ordinary"
    return (f'<g class="edge {kind}"><title>{escape(", ".join(edge.roles))}{" (required)" if edge.required else ""}'
            f'</title><path d="M{_n(start.x)},{_n(start.y)} Q{_n(control.x)},{_n(control.y)} {_n(end.x)},{_n(end.y)}" '
            f'marker-end="url(#arrow-{kind})"/></g>')


def _self_loop_svg(edge: Edge, center: Point) -> str:
    kind = "required" if edge.required else "ordinary"
    top = center.y - CENTER_R
    return (f'<g class="edge {kind}"><title>{escape(", ".join(edge.roles))} (to itself)</title>'
            f'<path d="M{_n(center.x - 10)},{_n(top + 2)} C{_n(center.x - 36)},{_n(top - 44)} '
            f'{_n(center.x + 36)},{_n(top - 44)} {_n(center.x + 10)},{_n(top + 2)}" marker-end="url(#arrow-{kind})"/></g>')


def _node_svg(node: Node, point: Point, radius: int, labels: Sequence[Label]) -> str:
    title = escape(node.title or node.label)
    body = f'<circle cx="{_n(point.x)}" cy="{_n(point.y)}" r="{radius}"/>' + "".join(_text(t) for t in labels)
    classes = f"node {node.status}"
    if node.href:
        return (f'<a href="{escape(node.href)}" class="{classes}" aria-label="{title}">'
                f"<title>{title}</title>{body}</a>")
    return f'<g class="{classes}" role="img" aria-label="{title}"><title>{title}</title>{body}</g>'


def render_svg(graph: Graph, *, title: str, description: str, more_out: str = "#out-h", more_in: str = "#in-h") -> str:
    """The picture as one `<svg>` element; every text is escaped here. Only attributes and
    classes style it (the page's CSP allows no inline style)."""
    plan = layout(graph, more_out=more_out, more_in=more_in)
    points = plan.points
    keys = {row.node.key: row.node.key for row in plan.rows}
    keys[graph.center.key] = ""
    pairs = {(e.source, e.target) for e in graph.edges}
    edges = []
    for edge in graph.edges:
        if edge.source not in keys or edge.target not in keys:
            continue
        if edge.source == edge.target:
            edges.append(_self_loop_svg(edge, plan.center))
        else:
            edges.append(_edge_svg(edge, points, keys, bent=(edge.target, edge.source) in pairs))
    loop = [plan.loop_label] if plan.loop_label else []
    nodes = [_node_svg(graph.center, plan.center, CENTER_R, [plan.center_label, *loop])]
    nodes += [_node_svg(row.node, row.point, NODE_R, [row.label, *([row.roles] if row.roles else [])])
              for row in plan.rows]
    markers = "".join(
        f'<marker id="arrow-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="{size}" markerHeight="{size}" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>'
        for kind, size in (("required", 4), ("ordinary", 6)))
    height = _n(plan.height)
    return (f'<svg class="atom-graph" viewBox="0 0 {WIDTH} {height}" role="group" '
            f'aria-labelledby="graph-title" aria-describedby="graph-desc" xmlns="http://www.w3.org/2000/svg">'
            f'<title id="graph-title">{escape(title)}</title><desc id="graph-desc">{escape(description)}</desc>'
            f"<defs>{markers}</defs>{''.join(_text(h) for h in plan.headings)}"
            f'<g class="edges">{"".join(edges)}</g><g class="nodes">{"".join(nodes)}</g></svg>')
