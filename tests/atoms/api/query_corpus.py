"""A corpus that exercises every level of the read path, built through the services in
batches so that thousands of atoms take seconds (used by test_read_queries.py).

Each group g holds ten atoms; all but the detail match "needle", and those of the
source, the chain, the note and the extractions also hold the group's own word (`word`):

- a source `s` ("needle source g ...") written by the ingest key;
- a required chain: root `r` requires condition `c`, which requires detail `d` (two closure
  levels); `r` also links to note `n` (an ordinary link: a graph level);
- note `n` links to the previous group's note (graph edges across groups);
- plain atoms `a` and `b`, both linked from a list atom `l`;
- two extractions `e1`, `e2` written by the agent key under an input token that names `s` as
  its source: overlapping verified quotes (evidence), citations, generated revisions whose
  staleness is judged; `e1` links to `r` and `e2` to `c` (reached by reverse edges), and `e2`
  requires `d` (a closure member shared with `c`).
"""

from __future__ import annotations

from typing import Any

from atoms.api.observe import answer_observe
from atoms.api.write import answer_write
from atoms.core.canonical import sha256_hex
from atoms.models import Ref, Revision
from atoms.principal import Principal
from atoms.services.refs import issue_refs
from tenants.models import ApiKey

PER_GROUP = 10
GROUPS_PER_BATCH = 12  # 96 ingest changes per write, under the 256-change bound
PAYLOAD = sha256_hex("the model payload")


def word(g: int) -> str:
    """Group g's own word: a query naming it ranks that group's atoms first."""
    return f"kiwi{g:05d}"


def _source_text(g: int) -> str:
    return f"needle source {g}: first needle part, shared needle middle {word(g)}, last needle part"


def _spans(g: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two byte spans of source g that overlap on its middle (ASCII: bytes are characters)."""
    text = _source_text(g)
    middle = text.index("shared")
    return (text.index("first"), text.index(",", middle)), (middle, len(text))


def _ingest_changes(g: int, first: int) -> list[dict[str, Any]]:
    def create(name: str, text: str, links: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"id": f"{name}{g}", "op": "create", "content": {"text": text, "links": links or {}}, "sources": []}

    note_links: dict[str, Any] = {}
    if g > first:  # the previous group's note, in the same batch
        note_links = {"next": {"local": f"n{g - 1}"}}
    return [
        create("s", _source_text(g)),
        create("d", f"detail {g} of the condition"),
        create("c", f"needle condition {word(g)}", {"detail": {"local": f"d{g}", "required": True}}),
        create("n", f"needle note {word(g)} about the root", note_links),
        create("r", f"needle root {word(g)}", {"condition": {"local": f"c{g}", "required": True},
                                               "see": {"local": f"n{g}"}}),
        create("a", f"needle plain {g} alpha"),
        create("b", f"needle plain {g} beta with a somewhat longer body than alpha"),
        create("l", f"needle list {g}", {"see": [{"local": f"a{g}"}, {"local": f"b{g}"}]}),
    ]


def build(ingest: ApiKey, agent: ApiKey, host: ApiKey, groups: int) -> None:
    """Write `groups` groups (PER_GROUP atoms each) through answer_write and answer_observe."""
    ingest_caller, agent_caller, host_caller = (Principal.for_key(k) for k in (ingest, agent, host))
    for first in range(0, groups, GROUPS_PER_BATCH):
        batch = range(first, min(groups, first + GROUPS_PER_BATCH))
        changes = [change for g in batch for change in _ingest_changes(g, first)]
        outcome = answer_write(ingest_caller, {"changes": changes})
        refs = {change_id: view["ref"] for change_id, view in outcome["changes"].items()}
        # The agent's own refs of the sources and details it cites and links.
        wanted = [refs[f"{name}{g}"] for g in batch for name in "sdcr"]
        revisions = Revision.objects.in_bulk(
            list(Ref.objects.filter(id__in=wanted).values_list("revision_id", flat=True)))
        own = issue_refs(agent_caller, revisions.values())
        by_ref = {ref: own[revision_id] for ref, revision_id in
                  Ref.objects.filter(id__in=wanted).values_list("id", "revision_id")}
        token = answer_observe(host_caller, {
            "binding": {"key": agent.public_id, "generatedOrigin": "extraction"},
            "input": {"payloadDigest": PAYLOAD, "sources": [{"ref": by_ref[refs[f"s{g}"]]} for g in batch]}})["input"]
        extractions = []
        for g in batch:
            source = by_ref[refs[f"s{g}"]]
            text = _source_text(g)
            (s1, e1), (s2, e2) = _spans(g)
            extractions += [
                {"id": f"e1{g}", "op": "create",
                 "content": {"text": text[s1:e1], "links": {"about": {"ref": by_ref[refs[f"r{g}"]]}}},
                 "sources": [{"ref": source, "start": s1, "end": e1}], "input": token},
                {"id": f"e2{g}", "op": "create",
                 "content": {"text": text[s2:e2], "links": {"detail": {"ref": by_ref[refs[f"d{g}"]], "required": True},
                                                          "about": {"ref": by_ref[refs[f"c{g}"]]}}},
                 "sources": [{"ref": source, "start": s2, "end": e2}], "input": token},
            ]
        answer_write(agent_caller, {"changes": extractions, "binding": {"generatedOrigin": "extraction"}})
