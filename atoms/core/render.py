"""The read text: render format 2, verified quotes, evidence and cost (docs/atoms.md "Read path costs").

`render(S)` is the canonical JSON of `{"evidence":E,"formatVersion":2,"memory":M}`:

- `M` holds one unit per selected revision, the canonical `{links, provenance, ref, sources,
  text}`; a required body shared by several roots is therefore shown once.
- A verified quote is a unit whose text is provably a byte span of a source revision: a
  source atom quotes its whole body; an `extraction` atom with exactly one origin quotes that
  span when its body equals the cited bytes (checked against the stored quote digest).
- Verified quotes in S that overlap on one source revision (`s1 < e2 and s2 < e1`) form
  clusters; every unit in a cluster drops `text` and gains `quote:{end, ref, start,
  unit:"utf8"}`, and each cluster's union goes once into E, under its source, as a range
  `{end, omittedBefore?, start, text}` (`omittedBefore`: the gap since the previous range's
  end or since 0, only when > 0). Sources appear in E in the order their first quoting unit
  appears in M, ranges by start. Quotes that overlap nothing keep their text.
- `cost(S)` is the UTF-8 byte length of `render(S)` (tokenizer utf8-bytes-v1); cost(∅) = 0
  and the empty render is "".

`Layout` prices each unit once, so that selection prices a tentative set from the costs of
its units in time proportional to what changes, never by re-rendering (`source_extra`, the
only part that is not additive, is computed once per set of quotes on a source). A unit's
text comes from `unit_json`, a writer for the unit's fixed shape that prints exactly what
`canonical` prints (tests/atoms/core/test_render.py checks the two against each other). The
Layout keeps each unit's text from pricing, and `render` joins those texts inside the frame:
the canonical form of the whole page, whose members are written in key order, is the frame
around its members' canonical forms, so the page is never walked again (the same tests check
`render` against `canonical` of the page's dict form).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from atoms.core.canonical import canonical, canonical_flat, canonical_string
from atoms.core.closure import AtomNode, Closure
from atoms.core.spans import merge_spans

FORMAT_VERSION: Final = 2
TOKENIZER: Final = "utf8-bytes-v1"
# `{"evidence":` + E + `,"formatVersion":2,"memory":[` + units + `]}` without E: 12 + 29 + 2.
_FRAME_BYTES: Final = len('{"evidence":') + len(',"formatVersion":2,"memory":[') + len("]}")
EMPTY_WRAPPER_BYTES: Final = _FRAME_BYTES + len("[]")  # 45, docs/atoms.md "Worked example (search)"


@dataclass(frozen=True, slots=True)
class Quote:
    """A verified quote: `data` (the unit's body) is exactly bytes [start, end) of the source
    revision `source_revision_id`, which the reader knows as `ref`."""

    source_revision_id: str
    ref: str
    start: int
    end: int
    data: bytes


def verified_quote(node: AtomNode) -> Quote | None:
    """The quote `node` verifiably is, or None (docs/atoms.md "Read path costs" "Verified quotes")."""
    if node.origin == "source":
        return Quote(node.revision_id, node.ref, 0, node.body_bytes, node.body)
    if node.origin != "extraction" or len(node.origins) != 1:
        return None
    cited = node.origins[0]
    # A source the reader cannot read has no ref to quote under; the citation is not shown.
    if cited.ref is None or cited.end - cited.start != node.body_bytes:
        return None
    # The stored digest is of the cited bytes, so equal digests (and lengths) mean equal bytes
    # without loading the source body.
    if hashlib.sha256(node.body).hexdigest() != cited.quote_digest:
        return None
    return Quote(cited.source_revision_id, cited.ref, cited.start, cited.end, node.body)


def view_sources(node: AtomNode) -> list[dict[str, Any]]:
    """The unit's `sources`: citations of readable sources, in origin order (docs/atoms.md "Try it")."""
    return [{"end": o.end, "ref": o.ref, "start": o.start} for o in node.origins if o.ref is not None]


def unit(node: AtomNode, quote: Quote | None = None) -> dict[str, Any]:
    """The render unit of `node`; with `quote`, the quoted form (no text, a `quote` instead)."""
    body: dict[str, Any] = {
        "links": [dict(link) for link in node.links],
        "provenance": {"origin": node.origin, "producer": node.producer},
        "ref": node.ref,
        "sources": view_sources(node),
    }
    if quote is None:
        body["text"] = node.text
    else:
        body["quote"] = quote_json(quote)
    return body


def quote_json(quote: Quote) -> dict[str, Any]:
    """A quoted unit's `quote` member."""
    return {"end": quote.end, "ref": quote.ref, "start": quote.start, "unit": "utf8"}


def overlap_clusters(quotes: Mapping[str, Quote]) -> list[list[str]]:
    """Groups of ≥ 2 unit ids whose quotes (all on one source revision) overlap transitively.

    Overlap is strict (`s1 < e2 and s2 < e1`): touching spans do not overlap. Non-empty spans
    are swept by start. An empty span [p, p) overlaps exactly the non-empty spans with
    s < p < e, and such a point lies strictly inside a component's union iff it lies strictly
    inside one of its spans, so empties attach to the component whose union holds them.
    Clusters come ordered by start; inside, non-empty spans by (start, end, id), then empties.
    """
    ordered = sorted(quotes, key=lambda key: (quotes[key].start, quotes[key].end, key))
    components: list[tuple[int, int, list[str]]] = []
    for key in ordered:
        quote = quotes[key]
        if quote.start == quote.end:
            continue
        if components and quote.start < components[-1][1]:
            start, end, keys = components[-1]
            keys.append(key)
            components[-1] = (start, max(end, quote.end), keys)
        else:
            components.append((quote.start, quote.end, [key]))
    for key in ordered:
        point = quotes[key].start
        if quotes[key].start != quotes[key].end:
            continue
        for start, end, keys in components:
            if start < point < end:
                keys.append(key)
                break
    return [keys for _, _, keys in components if len(keys) > 1]


def _cluster_range(cluster: Sequence[Quote]) -> tuple[int, int, str]:
    """The union [start, end) of one cluster and its text, assembled from the quotes' own
    bytes: each quoting body equals its span, so the source body is never needed."""
    start = min(quote.start for quote in cluster)
    end = max(quote.end for quote in cluster)
    buffer = bytearray(end - start)
    for quote in cluster:
        buffer[quote.start - start:quote.end - start] = quote.data
    return start, end, buffer.decode("utf-8")


def evidence_entry(ref: str, clusters: Sequence[Sequence[Quote]]) -> dict[str, Any]:
    """One source's E entry: a range per cluster, by start, with `omittedBefore` when > 0."""
    ranges: list[dict[str, Any]] = []
    previous_end = 0
    for start, end, text in sorted(_cluster_range(cluster) for cluster in clusters):
        entry: dict[str, Any] = {"end": end, "start": start, "text": text}
        if start > previous_end:
            entry["omittedBefore"] = start - previous_end
        ranges.append(entry)
        previous_end = end
    return {"ranges": ranges, "ref": ref, "unit": "utf8"}


@dataclass(frozen=True, slots=True)
class Rendered:
    """A rendered set: the text, its token count and the merged `sources` of RecallResult."""

    order: tuple[str, ...]
    text: str
    token_count: int
    sources: tuple[dict[str, Any], ...]
    quoted: Mapping[str, Quote]  # the units shown as quotes (their `quote_json`), by revision id


class Layout:
    """Canonical unit forms of a fixed universe of nodes, for exact rendering and fast cost.

    cost(S) = 0 for ∅, else 45 + Σ unit bytes + (|S| - 1) + the extra bytes of quoting
    clusters (quoted units minus their plain form, plus E entries and their commas). Only
    that last part depends on more than one unit, and only per source revision, which is what
    `source_extra` prices.
    """

    def __init__(self, nodes: Iterable[AtomNode]) -> None:
        self.nodes: dict[str, AtomNode] = {}
        self.plain_size: dict[str, int] = {}
        self.quotes: dict[str, Quote] = {}
        self._plain: dict[str, str] = {}  # unit_json of each unit, kept for render
        self._quoted: dict[str, str] = {}  # filled when a unit first joins a cluster
        self._extra: dict[frozenset[str], tuple[int, int]] = {}
        for node in nodes:
            key = node.revision_id
            if key in self.nodes:
                continue
            self.nodes[key] = node
            text = self._plain[key] = unit_json(node)
            self.plain_size[key] = len(text.encode("utf-8"))
            quote = verified_quote(node)
            if quote is not None:
                self.quotes[key] = quote

    def _quoted_json(self, key: str) -> str:
        text = self._quoted.get(key)
        if text is None:
            text = self._quoted[key] = unit_json(self.nodes[key], self.quotes[key])
        return text

    def quoted_size(self, key: str) -> int:
        """Bytes of the quoted form of a verified quote's unit."""
        return len(self._quoted_json(key).encode("utf-8"))

    def source_extra(self, quotes: Mapping[str, Quote]) -> tuple[int, int]:
        """For the quotes in S on one source revision: (bytes the clustered units add over
        their plain form, bytes of the source's E entry or 0 when nothing overlaps). Computed
        once per set of quotes: selection asks again for every tentative set."""
        members = frozenset(quotes)
        known = self._extra.get(members)
        if known is not None:
            return known
        clusters = overlap_clusters(quotes)
        if not clusters:
            self._extra[members] = (0, 0)
            return 0, 0
        delta = sum(self.quoted_size(key) - self.plain_size[key] for cluster in clusters for key in cluster)
        ref = quotes[clusters[0][0]].ref
        entry = evidence_entry(ref, [[quotes[key] for key in cluster] for cluster in clusters])
        self._extra[members] = (delta, _size(entry))
        return self._extra[members]

    def cost(self, ids: Iterable[str]) -> int:
        """cost(S): the byte length render(S) would have, without building it."""
        members = set(ids)
        if not members:
            return 0
        by_source: dict[str, dict[str, Quote]] = {}
        for key in members:
            quote = self.quotes.get(key)
            if quote is not None:
                by_source.setdefault(quote.source_revision_id, {})[key] = quote
        units = sum(self.plain_size[key] for key in members)
        entries: list[int] = []
        for quotes in by_source.values():
            delta, entry = self.source_extra(quotes)
            units += delta
            if entry:
                entries.append(entry)
        return frame_cost(len(members), units, len(entries), sum(entries))

    def render(self, order: Sequence[str]) -> Rendered:
        """render(S) with units in `order` (see `render_order`): the frame of `_FRAME_BYTES`
        around the canonical E entries and the units' kept `unit_json` texts."""
        if not order:
            return Rendered(order=(), text="", token_count=0, sources=(), quoted={})
        by_source: dict[str, dict[str, Quote]] = {}
        for key in order:
            quote = self.quotes.get(key)
            if quote is not None:
                by_source.setdefault(quote.source_revision_id, {})[key] = quote
        clusters_of: dict[str, list[list[str]]] = {}
        quoted: set[str] = set()
        for source, quotes in by_source.items():
            clusters = overlap_clusters(quotes)
            if clusters:
                clusters_of[source] = clusters
                quoted.update(key for cluster in clusters for key in cluster)
        memory: list[str] = []
        evidence: list[str] = []
        shown: dict[str, Quote] = {}
        for key in order:
            if key not in quoted:
                memory.append(self._plain[key])
                continue
            quote = shown[key] = self.quotes[key]
            memory.append(self._quoted_json(key))
            if quote.source_revision_id in clusters_of:
                # First appearance of this source among quoting units: its E entry goes here.
                clusters = clusters_of.pop(quote.source_revision_id)
                quotes = by_source[quote.source_revision_id]
                evidence.append(canonical(evidence_entry(quote.ref, [[quotes[k] for k in cluster]
                                                                     for cluster in clusters])))
        # canonical({"evidence": E, "formatVersion": 2, "memory": M}): keys in code-point order.
        text = (f'{{"evidence":[{",".join(evidence)}],"formatVersion":{FORMAT_VERSION},'
                f'"memory":[{",".join(memory)}]}}')
        return Rendered(order=tuple(order), text=text, token_count=len(text.encode("utf-8")),
                        sources=tuple(merged_sources(self.nodes[key] for key in order)), quoted=shown)


def frame_cost(count: int, unit_bytes: int, entry_count: int, entry_bytes: int) -> int:
    """Bytes of a render with `count` units totalling `unit_bytes` and `entry_count` E entries
    totalling `entry_bytes`: the frame, the two arrays and the commas between items."""
    if count == 0:
        return 0
    evidence = 2 + entry_bytes + max(0, entry_count - 1)
    return _FRAME_BYTES + evidence + unit_bytes + (count - 1)


def merged_sources(nodes: Iterable[AtomNode]) -> list[dict[str, Any]]:
    """RecallResult `sources`: the units' citations, overlapping or touching spans merged per
    source revision; sources by first appearance, spans by start."""
    refs: dict[str, str] = {}
    spans: list[tuple[str, int, int]] = []
    for node in nodes:
        for origin in node.origins:
            if origin.ref is not None:
                refs[origin.source_revision_id] = origin.ref
                spans.append((origin.source_revision_id, origin.start, origin.end))
    return [{"end": end, "ref": refs[source], "start": start} for source, start, end in merge_spans(spans)]


def render_order(selected: Iterable[str], ranking: Sequence[str], closures: Mapping[str, Closure]) -> list[str]:
    """Unit order of docs/atoms.md "Read path costs": walk the ranking; for each root whose closure lies in S emit the
    root, then its closure in BFS order, skipping units already emitted; leftovers last
    (sorted by revision id, so the order is a function of the set)."""
    members = set(selected)
    emitted: dict[str, None] = {}
    for root in ranking:
        found = closures.get(root)
        if found is None or found.is_blocked or root not in members:
            continue
        ids = found.ids
        if all(key in members for key in ids):
            for key in ids:
                emitted.setdefault(key, None)
    return list(emitted) + sorted(members.difference(emitted))


def render(nodes: Sequence[AtomNode]) -> Rendered:
    """render(S) for nodes already in unit order (a one-off Layout)."""
    return Layout(nodes).render([node.revision_id for node in nodes])


def _size(value: Any) -> int:
    return len(canonical(value).encode("utf-8"))


def unit_json(node: AtomNode, quote: Quote | None = None) -> str:
    """canonical(unit(node, quote)), written for the unit's fixed shape: keys in code-point
    order (links, provenance, quote, ref, sources, text), so that pricing a unit does not walk
    it generically."""
    links = ",".join(canonical_flat(link) for link in node.links)
    provenance = canonical_flat({"origin": node.origin, "producer": node.producer})
    sources = ",".join(canonical_flat(source) for source in view_sources(node))
    head = f'{{"links":[{links}],"provenance":{provenance},'
    ref = canonical_string(node.ref)
    if quote is None:
        return f'{head}"ref":{ref},"sources":[{sources}],"text":{canonical_string(node.text)}}}'
    quoted = canonical_flat(quote_json(quote))
    return f'{head}"quote":{quoted},"ref":{ref},"sources":[{sources}]}}'
