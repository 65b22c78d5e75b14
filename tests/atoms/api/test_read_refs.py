"""A read issues refs only for what its page shows (docs/atoms.md "Read path costs").

Packing prices every ranked closure with stand-in refs of the real refs' length; only the
page's units, the link targets and sources their views name and the stale revisions get
real refs, and no stand-in ever reaches the answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from atoms.api.read import answer_read
from atoms.models import Ref
from atoms.principal import Principal
from tests.atoms.api import query_corpus
from tests.atoms.api.helpers import AtomsClient

REF = re.compile(r"ref:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
GROUP = 3


def _named(read: dict[str, Any]) -> set[str]:
    """Every ref the answer names, wherever it names it."""
    return set(REF.findall(json.dumps(read)))


def test_a_read_issues_refs_only_for_what_its_page_shows(I: AtomsClient, W: AtomsClient, X: AtomsClient) -> None:
    query_corpus.build(I.key, W.key, X.key, 10)
    caller = Principal.for_key(W.key)
    word = query_corpus.word(GROUP)
    state = {"query": f"needle root {word}", "context": f"shared middle {word}"}
    everything = answer_read(caller, {"state": state, "options": {"tokens": 65536}})
    Ref.objects.filter(principal=caller.principal_id).delete()

    read = answer_read(caller, {"state": state, "options": {"tokens": 900}})

    assert read["items"] and "cursor" in read  # the page left ranked roots out
    assert len(read["items"]) < len(everything["items"])
    issued = set(Ref.objects.filter(principal=caller.principal_id).values_list("id", flat=True))
    assert issued == _named(read)


def test_no_stand_in_ref_reaches_the_answer(I: AtomsClient, W: AtomsClient, X: AtomsClient) -> None:
    query_corpus.build(I.key, W.key, X.key, 10)
    caller = Principal.for_key(W.key)
    word = query_corpus.word(GROUP)
    read = answer_read(caller, {"state": {"query": f"needle root {word}",
                                                     "context": f"shared middle {word}"}})

    named = _named(read)
    assert json.loads(read["text"])["evidence"]  # quotes name their sources' refs in the text too
    assert "ref:00000000-0000-0000-0000-" not in json.dumps(read)
    assert named <= set(Ref.objects.filter(principal=caller.principal_id).values_list("id", flat=True))
    assert len(read["text"].encode()) == read["tokenCount"]
