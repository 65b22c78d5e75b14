"""Incremental pricing of tentative sets for read's selection (docs/atoms.md "Selection
utility (read)" and "Read path costs").

A `Packing` is a growing feasible set S with the running sums of its render cost (plain unit
bytes, the extra bytes of merged quotes, the evidence entries) and of its utility classes, so
that pricing S with a closure added costs O(|C(r)|) instead of a re-render: the cost of a
union comes from the costs of its units. atoms/core/selection.py decides which closures to
add; the render (atoms/core/render.py) stays the judge, and read checks that the page it
renders costs exactly what it was priced at.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from atoms.core.closure import AtomNode
from atoms.core.render import Layout, Quote, frame_cost


@dataclass(frozen=True, slots=True)
class Trial:
    """The outcome of pricing S with C(r) added, without committing it."""

    new: tuple[str, ...]
    cost: int
    count: int
    text_bytes: int
    delta_u: float
    classes: dict[Hashable, float]
    sources: dict[str, tuple[dict[str, Quote], int, int]]
    plain: int = 0  # Σ plain unit bytes of `new` (set on the memoized lone pricing only)


@dataclass
class Packing:
    """A growing feasible set S with the running sums that make a trial cost O(|C(r)|)."""

    layout: Layout
    class_of: Mapping[str, Hashable]
    weight: Mapping[str, float]
    ids: set[str] = field(default_factory=set)
    plain_bytes: int = 0
    text_bytes: int = 0
    class_max: dict[Hashable, float] = field(default_factory=dict)
    # source revision → (quotes in S on it, unit bytes its clusters add, its E entry bytes)
    sources: dict[str, tuple[dict[str, Quote], int, int]] = field(default_factory=dict)
    extra_units: int = 0
    entry_bytes: int = 0
    entry_count: int = 0
    # Closures priced on their own, shared by every packing of one select call.
    alone: dict[tuple[str, ...], Trial | None] = field(default_factory=dict)

    @property
    def cost(self) -> int:
        return frame_cost(len(self.ids), self.plain_bytes + self.extra_units, self.entry_count, self.entry_bytes)

    @property
    def utility(self) -> float:
        # fsum is exactly rounded, so U does not depend on the order classes were added in.
        return math.fsum(self.class_max.values())

    def covers(self, members: Sequence[str]) -> bool:
        return all(key in self.ids for key in members)

    def trial(self, members: Sequence[str]) -> Trial:
        """S with `members` added, priced from the running sums and the units' own costs."""
        alone = self._alone(members)
        if alone is not None and self.ids.isdisjoint(members) and self.sources.keys().isdisjoint(alone.sources):
            # None of the members is in S and no quote of theirs meets another: the sums add.
            count = len(self.ids) + len(alone.new)
            return Trial(new=alone.new, cost=frame_cost(count, self.plain_bytes + alone.plain + self.extra_units,
                                                         self.entry_count, self.entry_bytes),
                          count=count, text_bytes=self.text_bytes + alone.text_bytes, delta_u=alone.delta_u,
                          classes=alone.classes, sources=alone.sources)
        return self._trial(members)

    def _alone(self, members: Sequence[str]) -> Trial | None:
        """`members` priced on their own (memoized per closure), or None when two of them quote
        one source (their clusters are priced together) or two share a utility class."""
        key = tuple(members)
        if key not in self.alone:
            layout = self.layout
            classes = {self.class_of[m]: self.weight[m] for m in key}
            sources: dict[str, tuple[dict[str, Quote], int, int]] = {}
            for m in key:
                quote = layout.quotes.get(m)
                if quote is not None:
                    sources.setdefault(quote.source_revision_id, ({}, 0, 0))[0][m] = quote
            if len(classes) < len(key) or any(len(quotes) > 1 for quotes, _, _ in sources.values()):
                self.alone[key] = None
            else:
                self.alone[key] = Trial(
                    new=key, cost=0, count=len(key), text_bytes=sum(layout.nodes[m].body_bytes for m in key),
                    delta_u=math.fsum(classes.values()), classes=classes, sources=sources,
                    plain=sum(layout.plain_size[m] for m in key))
        return self.alone[key]

    def _trial(self, members: Sequence[str]) -> Trial:
        layout, ids, class_max = self.layout, self.ids, self.class_max
        new = tuple(key for key in members if key not in ids)
        plain, text_bytes = self.plain_bytes, self.text_bytes
        classes: dict[Hashable, float] = {}
        sources: dict[str, tuple[dict[str, Quote], int, int]] = {}
        for key in new:
            plain += layout.plain_size[key]
            text_bytes += layout.nodes[key].body_bytes
            name, value = self.class_of[key], self.weight[key]
            best = classes.get(name)
            if best is None:
                best = class_max.get(name)
            if best is None or value > best:
                classes[name] = value
            quote = layout.quotes.get(key)
            if quote is not None:
                source = quote.source_revision_id
                current = sources.get(source) or self.sources.get(source)
                quotes = dict(current[0]) if current else {}
                quotes[key] = quote
                sources[source] = (quotes, 0, 0)
        delta_u = math.fsum(value - class_max.get(name, 0.0) for name, value in classes.items())
        extra, entry_bytes, entry_count = self.extra_units, self.entry_bytes, self.entry_count
        for source, (quotes, _, _) in sources.items():
            # A lone quote overlaps nothing (every source atom quotes itself): no need to price it.
            delta, entry = layout.source_extra(quotes) if len(quotes) > 1 else (0, 0)
            _, old_delta, old_entry = self.sources.get(source, ({}, 0, 0))
            extra += delta - old_delta
            entry_bytes += entry - old_entry
            entry_count += (entry > 0) - (old_entry > 0)
            sources[source] = (quotes, delta, entry)
        count = len(ids) + len(new)
        return Trial(new=new, cost=frame_cost(count, plain + extra, entry_count, entry_bytes), count=count,
                      text_bytes=text_bytes, delta_u=delta_u, classes=classes, sources=sources)

    def commit(self, trial: Trial) -> None:
        layout = self.layout
        self.ids.update(trial.new)
        self.plain_bytes += trial.plain if trial.plain else sum(layout.plain_size[key] for key in trial.new)
        self.text_bytes = trial.text_bytes
        self.class_max.update(trial.classes)
        for source, (quotes, delta, entry) in trial.sources.items():
            _, old_delta, old_entry = self.sources.get(source, ({}, 0, 0))
            self.extra_units += delta - old_delta
            self.entry_bytes += entry - old_entry
            self.entry_count += (entry > 0) - (old_entry > 0)
            self.sources[source] = (quotes, delta, entry)


def quote_class(node: AtomNode, quote: Quote | None) -> Hashable:
    """The utility class of a revision: itself, or the identity of its verified quote."""
    if quote is None:
        return ("revision", node.revision_id)
    return ("quote", quote.source_revision_id, quote.start, quote.end, node.producer, node.origin, node.slots)
