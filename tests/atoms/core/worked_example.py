"""The worked examples built by hand as core inputs (the five atoms of
docs/atoms.md "Worked example (search)", and a source with two overlapping extractions) and a
hypothesis strategy of quoting atoms.

Refs use the fixed placeholder format `ref:00000000-0000-4000-8000-00000000000N` (40 bytes,
like real refs), so every byte count of the worked example in docs/atoms.md "Selection utility (read)"
holds here. Atom and revision ids follow the same numbering. The expected rendered texts are
written out verbatim below.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from atoms.core.canonical import sha256_hex
from atoms.core.closure import AtomNode, Closure, OriginSpan, Slot, StoreResolver, closures


def ref(n: int) -> str:
    return f"ref:00000000-0000-4000-8000-{n:012d}"


def atom_id(n: int) -> str:
    return f"atom:00000000-0000-4000-8000-{n:012d}"


def revision_id(n: int) -> str:
    return f"revision:00000000-0000-4000-8000-{n:012d}"


def link(role: str, target: int, *, required: bool = False, at: str = "logical") -> dict[str, object]:
    """An AtomView link to atom N, as the API shows links."""
    return {"at": at, "orderKey": "0", "ref": ref(target), "required": required, "role": role}


def make_node(n: int, text: str, *, links: Sequence[tuple[str, int, bool]] = (), origin: str = "source",
              producer: str = "user:rita", origins: Sequence[OriginSpan] = (), **flags: Any) -> AtomNode:
    """Atom N's head: logical links `(role, target N, required)` as both AtomView links and slots."""
    return AtomNode(
        revision_id=revision_id(n), atom_id=atom_id(n), ref=ref(n), text=text, origin=origin, producer=producer,
        links=tuple(link(role, target, required=required) for role, target, required in links),
        slots=tuple(Slot(role=role, target_atom_id=atom_id(target), required=required)
                    for role, target, required in links),
        origins=tuple(origins), **flags,
    )


def citation(source: AtomNode, start: int, end: int) -> OriginSpan:
    """A readable citation of `source` bytes [start, end) with its stored quote digest."""
    return OriginSpan(source_revision_id=source.revision_id, start=start, end=end,
                      quote_digest=sha256_hex(source.body[start:end]), ref=source.ref)


def resolver(nodes: Sequence[AtomNode], purged: Sequence[str] = ()) -> StoreResolver:
    """Every node is its atom's head."""
    return StoreResolver(heads={node.atom_id: node.revision_id for node in nodes},
                         nodes={node.revision_id: node for node in nodes}, purged=frozenset(purged))


def closures_of(roots: Sequence[AtomNode], nodes: Sequence[AtomNode]) -> dict[str, Closure]:
    return closures(roots, resolver(nodes))


def extraction_of(n: int, source: AtomNode, start: int, end: int) -> AtomNode:
    """An extraction atom whose body is exactly bytes [start, end) of `source`."""
    return make_node(n, source.body[start:end].decode(), origin="extraction", producer="key:extractor",
                     origins=[citation(source, start, end)])


# --- hypothesis: quote universes ----------------------------------------------------------

ALPHABET = st.sampled_from(["a", "b", "é", "日", "😀"])


@st.composite
def quote_universes(draw: st.DrawFn) -> list[AtomNode]:
    """One or two sources, extractions of random spans (some altered, so not verified)."""
    nodes: list[AtomNode] = []
    for s in range(draw(st.integers(1, 2))):
        text = "".join(draw(st.lists(ALPHABET, min_size=0, max_size=10)))
        source = make_node(100 + s * 50, text, producer="key:ingest")
        nodes.append(source)
        bounds = [0]
        for char in text:
            bounds.append(bounds[-1] + len(char.encode()))
        for n in range(draw(st.integers(0, 5))):
            start, end = sorted(draw(st.lists(st.sampled_from(bounds), min_size=2, max_size=2)))
            extraction = extraction_of(101 + s * 50 + n, source, start, end)
            if draw(st.booleans()) and draw(st.booleans()):
                extraction = dataclasses.replace(extraction, text=extraction.text + "x")
            nodes.append(extraction)
    nodes.append(make_node(1, "plain", links=[("see", 2, False)]))
    return nodes


# --- five atoms written by rita -------------------------------------------------------------

A = make_node(1, "Brewing temperature for coffee: 93 C.", links=[("detail", 3, False)])
B = make_node(2, "Alice takes her coffee black.", links=[("condition", 4, True)])
C = make_node(3, "Water above 96 C scorches the grounds.")
D = make_node(4, "Applies on weekdays only.")
E = make_node(5, "Cold brew steeps for 12 hours.", links=[("related", 1, False)])
EXAMPLE = {"A": A, "B": B, "C": C, "D": D, "E": E}
NAME_OF = {node.revision_id: name for name, node in EXAMPLE.items()}
RANKING = [A, E, B, C, D]  # by activation, best first
# The exact activations (tests/atoms/core/test_activation.py), the weights w of selection.
EXACT_ACTIVATION = {"A": Fraction(14, 9), "B": Fraction(22, 45), "E": Fraction(13, 18), "C": Fraction(7, 18),
                    "D": Fraction(11, 45)}
WEIGHTS = {EXAMPLE[name].revision_id: float(value) for name, value in EXACT_ACTIVATION.items()}
EXAMPLE_CLOSURES = closures_of(RANKING, list(EXAMPLE.values()))

# --- a source and two extractions -------------------------------------------------------------

SOURCE = make_node(11, "AAAABBBBCCCC", producer="key:ingest")
E1 = make_node(12, "AAAABBBB", origin="extraction", producer="key:extractor", origins=[citation(SOURCE, 0, 8)])
E2 = make_node(13, "BBBBCCCC", origin="extraction", producer="key:extractor", origins=[citation(SOURCE, 4, 12)])
QUOTE_RANKING = [E1, E2, SOURCE]  # each scores 1/3; ties go by body bytes, then atom id
QUOTE_CLOSURES = closures_of(QUOTE_RANKING, QUOTE_RANKING)
QUOTE_WEIGHTS = {node.revision_id: 1.0 for node in QUOTE_RANKING}

# --- the rendered texts, verbatim ---------------------------------------------------------------

TEXT_4096 = (
    '{"evidence":[],"formatVersion":2,"memory":[{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000003","required":false,"role":"detail"}],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000001","sources":[],"text":"Brewing temperature for coffee: 93 C."},{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000001","required":false,"role":"related"}],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000005","sources":[],"text":"Cold brew steeps for 12 hours."},{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000004","required":true,"role":"condition"}],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000002","sources":[],"text":"Alice takes her coffee black."},{"links":[],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000004","sources":[],"text":"Applies on weekdays only."},{"links":[],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000003","sources":[],"text":"Water above 96 C scorches the grounds."}]}'
)

TEXT_1100 = (
    '{"evidence":[],"formatVersion":2,"memory":[{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000003","required":false,"role":"detail"}],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000001","sources":[],"text":"Brewing temperature for coffee: 93 C."},{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000001","required":false,"role":"related"}],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000005","sources":[],"text":"Cold brew steeps for 12 hours."},{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000004","required":true,"role":"condition"}],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000002","sources":[],"text":"Alice takes her coffee black."},{"links":[],"provenance":{"origin":"source","producer":"user:rita"},"ref":"ref:00000000-0000-4000-8000-000000000004","sources":[],"text":"Applies on weekdays only."}]}'
)

TEXT_QUOTES = (
    '{"evidence":[{"ranges":[{"end":12,"start":0,"text":"AAAABBBBCCCC"}],"ref":"ref:00000000-0000-4000-8000-000000000011","unit":"utf8"}],"formatVersion":2,"memory":[{"links":[],"provenance":{"origin":"extraction","producer":"key:extractor"},"quote":{"end":8,"ref":"ref:00000000-0000-4000-8000-000000000011","start":0,"unit":"utf8"},"ref":"ref:00000000-0000-4000-8000-000000000012","sources":[{"end":8,"ref":"ref:00000000-0000-4000-8000-000000000011","start":0}]},{"links":[],"provenance":{"origin":"extraction","producer":"key:extractor"},"quote":{"end":12,"ref":"ref:00000000-0000-4000-8000-000000000011","start":4,"unit":"utf8"},"ref":"ref:00000000-0000-4000-8000-000000000013","sources":[{"end":12,"ref":"ref:00000000-0000-4000-8000-000000000011","start":4}]},{"links":[],"provenance":{"origin":"source","producer":"key:ingest"},"quote":{"end":12,"ref":"ref:00000000-0000-4000-8000-000000000011","start":0,"unit":"utf8"},"ref":"ref:00000000-0000-4000-8000-000000000011","sources":[]}]}'
)
