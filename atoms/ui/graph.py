"""The neighbourhood picture on an atom's page: layout maths and SVG, in pure Python.

No Django here (and no JS library in the page): the detail view hands over plain nodes and
edges, gets back an SVG string. The layout is two-sided radial: the current atom sits in the
centre, the atoms it links to on the right arc, the atoms linking to it on the left arc, so the
reading direction says which way a link goes before the arrowheads do. A side with many
neighbours alternates between an outer and an inner ring so that circles never overlap.
Every node but the centre and unavailable targets is a real link to that atom's page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

WIDTH = 720
HEIGHT = 480
NODE_R = 18
CENTER_R = 30
RX = 290  # outer ring radii (an ellipse: the page is wider than tall)
RY = 200
INNER = 0.6  # inner ring, as a fraction of the outer one
ARC = 72  # degrees either side of the horizontal axis that a side's arc spans
RING_SWITCH = 5  # a side with more neighbours than this uses both rings
MAX_PER_SIDE = 8
LABEL_CHARS = 16
ROLE_CHARS = 16


@dataclass(frozen=True)
class Point:
    x: float
    y: float

    def distance(self, other: Point) -> float:
        return math.hypot(self.x - other.x, self.y - other.y)


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
    hidden: int = 0  # neighbours left out of the picture (past MAX_PER_SIDE)


def side_angles(count: int, *, right: bool) -> list[float]:
    """Evenly spread angles (radians, y pointing down) on one side's arc, top to bottom.
    One neighbour sits on the horizontal axis."""
    if count <= 0:
        return []
    span = math.radians(ARC)
    angles = [-span + 2 * span * (i + 0.5) / count for i in range(count)]
    return angles if right else [math.pi - a for a in angles]


def side_points(count: int, center: Point, *, right: bool) -> list[Point]:
    """Positions for `count` neighbours on one side; past RING_SWITCH they alternate
    between the outer and the inner ring."""
    points = []
    for i, angle in enumerate(side_angles(count, right=right)):
        scale = INNER if count > RING_SWITCH and i % 2 == 1 else 1.0
        points.append(Point(center.x + scale * RX * math.cos(angle), center.y + scale * RY * math.sin(angle)))
    return points


def layout(outgoing: Sequence[str], incoming: Sequence[str], *, width: int = WIDTH,
           height: int = HEIGHT) -> dict[str, Point]:
    """Node key → position. Keys are unique across both sides (the caller puts an atom
    linked both ways on the outgoing side only); the centre is under the key ""."""
    center = Point(width / 2, height / 2)
    positions = {"": center}
    for keys, right in ((outgoing, True), (incoming, False)):
        for key, point in zip(keys, side_points(len(keys), center, right=right), strict=True):
            positions[key] = point
    return positions


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


def short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _n(value: float) -> str:
    return f"{value:.1f}"


def _edge_svg(edge: Edge, positions: dict[str, Point], keys: dict[str, str], bent: bool) -> str:
    a, b = positions[keys[edge.source]], positions[keys[edge.target]]
    ra = CENTER_R if keys[edge.source] == "" else NODE_R
    rb = CENTER_R if keys[edge.target] == "" else NODE_R
    start, end = trimmed(a, b, ra, rb + 2)
    control = curve_control(start, end, 22 if bent else 0)
    kind = "required" if edge.required else "ordinary"
    roles = ", ".join(edge.roles)
    label_at = Point(0.25 * start.x + 0.5 * control.x + 0.25 * end.x, 0.25 * start.y + 0.5 * control.y + 0.25 * end.y)
    return (f'<g class="edge {kind}"><title>{escape(roles)}{" (required)" if edge.required else ""}</title>'
            f'<path d="M{_n(start.x)},{_n(start.y)} Q{_n(control.x)},{_n(control.y)} {_n(end.x)},{_n(end.y)}" '
            f'marker-end="url(#arrow-{kind})"/>'
            f'<text x="{_n(label_at.x)}" y="{_n(label_at.y - 4)}" class="role">{escape(short(roles, ROLE_CHARS))}</text></g>')


def _self_loop_svg(edge: Edge, center: Point) -> str:
    kind = "required" if edge.required else "ordinary"
    top = center.y - CENTER_R
    roles = ", ".join(edge.roles)
    return (f'<g class="edge {kind}"><title>{escape(roles)} (to itself)</title>'
            f'<path d="M{_n(center.x - 12)},{_n(top + 2)} C{_n(center.x - 40)},{_n(top - 46)} '
            f'{_n(center.x + 40)},{_n(top - 46)} {_n(center.x + 12)},{_n(top + 2)}" marker-end="url(#arrow-{kind})"/>'
            f'<text x="{_n(center.x)}" y="{_n(top - 40)}" class="role">{escape(short(roles, ROLE_CHARS))}</text></g>')


def _node_svg(node: Node, point: Point, radius: int) -> str:
    label = escape(short(node.label, LABEL_CHARS))
    title = escape(node.title or node.label)
    body = (f'<circle cx="{_n(point.x)}" cy="{_n(point.y)}" r="{radius}"/>'
            f'<text x="{_n(point.x)}" y="{_n(point.y + radius + 14)}">{label}</text>')
    classes = f"node {node.status}"
    if node.href:
        return (f'<a href="{escape(node.href)}" class="{classes}" aria-label="{title}">'
                f"<title>{title}</title>{body}</a>")
    return f'<g class="{classes}" role="img" aria-label="{title}"><title>{title}</title>{body}</g>'


def render_svg(graph: Graph, *, title: str, description: str) -> str:
    """The picture as one `<svg>` element; every text is escaped here."""
    out_keys = [n.key for n in graph.outgoing]
    in_keys = [n.key for n in graph.incoming]
    positions = layout(out_keys, in_keys)
    # Node key → layout key: the centre is "" in the layout.
    keys = {n.key: n.key for n in [*graph.outgoing, *graph.incoming]}
    keys[graph.center.key] = ""
    pairs = {(e.source, e.target) for e in graph.edges}
    edges = []
    for edge in graph.edges:
        if edge.source not in keys or edge.target not in keys:
            continue
        if edge.source == edge.target:
            edges.append(_self_loop_svg(edge, positions[""]))
        else:
            edges.append(_edge_svg(edge, positions, keys, bent=(edge.target, edge.source) in pairs))
    nodes = [_node_svg(graph.center, positions[""], CENTER_R)]
    nodes += [_node_svg(n, positions[n.key], NODE_R) for n in [*graph.outgoing, *graph.incoming]]
    markers = "".join(
        f'<marker id="arrow-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="{size}" markerHeight="{size}" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>'
        for kind, size in (("required", 5), ("ordinary", 7)))
    return (f'<svg class="atom-graph" viewBox="0 0 {WIDTH} {HEIGHT}" role="group" aria-labelledby="graph-title" '
            f'aria-describedby="graph-desc" xmlns="http://www.w3.org/2000/svg">'
            f'<title id="graph-title">{escape(title)}</title><desc id="graph-desc">{escape(description)}</desc>'
            f"<defs>{markers}</defs>"
            f'<text x="12" y="20" class="side">links in</text>'
            f'<text x="{WIDTH - 12}" y="20" class="side" text-anchor="end">links out</text>'
            f'<g class="edges">{"".join(edges)}</g><g class="nodes">{"".join(nodes)}</g></svg>')
