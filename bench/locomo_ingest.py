"""LoCoMo into the Atom engine, shared by bench/locomo_recall.py and bench/locomo_tune.py:
the data, the two forms a conversation is written in, one tenant per (conversation, form),
indexing as the worker does it, and the Django set-up of a benchmark process.

Forms (docs/benchmarks.md, "Retrieval quality (LoCoMo)"):

- plain: every turn one atom with no links (how the benchmark has always written it);
- linked: the same atoms, each session a chain, as a user would organize a chat history:
  every turn but a session's first links to the turn before it in that session with role
  `follows` (an ordinary logical link, not required, so read's closures never pull it in).

Both forms write whole sessions in batches of at most 128 changes (no session is longer),
so every `follows` link is a local link inside its batch and the two forms differ only in
their links.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
BATCH = 128  # the largest write the service accepts (see bench/atoms_scale.py)
CATEGORIES = (1, 2, 3, 4)
FORMS = ("plain", "linked")
ROLE = "follows"


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- The data ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str
    session: int


def turns_of(sample: dict[str, Any]) -> list[Turn]:
    """Every turn as its atom text, sessions in order."""
    conversation = sample["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k, v in conversation.items()
                     if re.fullmatch(r"session_\d+", k) and isinstance(v, list))
    out = []
    for n in numbers:
        date = conversation.get(f"session_{n}_date_time", "")
        for turn in conversation[f"session_{n}"]:
            text = f"[{date}] {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            out.append(Turn(turn["dia_id"], text, n))
    return out


def evidence_of(qa: dict[str, Any], known: set[str]) -> list[str]:
    """The question's evidence dia_ids that name a turn; a few entries pack several ids into
    one string ("D8:6; D9:17"), which are split."""
    ids: list[str] = []
    for entry in qa.get("evidence", []):
        for part in re.split(r"[;,\s]+", str(entry)):
            if part in known and part not in ids:
                ids.append(part)
    return ids


def samples(path: Path, limit: int | None) -> Iterator[dict[str, Any]]:
    import json

    data = json.loads(path.read_text())
    yield from data[:limit] if limit else data


# --- One conversation, in one form, in its own tenant ------------------------------------------

@dataclass
class Conversation:
    sample_id: str
    form: str
    turns: list[Turn]
    questions: list[dict[str, Any]]
    skipped: int
    caller: Any = None
    ref_turn: dict[str, int] = field(default_factory=dict)
    atom_turn: dict[str, int] = field(default_factory=dict)
    # Turns the threat scanner quarantined at write: not in recall, so not ranked by BM25 either.
    quarantined: set[int] = field(default_factory=set)
    unit_cost: list[int] = field(default_factory=list)
    links: int = 0


def prepare(sample: dict[str, Any], form: str) -> Conversation:
    turns = turns_of(sample)
    position = {turn.dia_id: i for i, turn in enumerate(turns)}
    questions, skipped = [], 0
    for index, qa in enumerate(sample["qa"]):
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = evidence_of(qa, set(position))
        if not evidence:
            skipped += 1
            continue
        questions.append({"sample": sample["sample_id"], "qa": index, "category": qa["category"],
                          "question": qa["question"], "evidence": evidence,
                          "turns": [position[dia] for dia in evidence]})
    return Conversation(sample_id=sample["sample_id"], form=form, turns=turns, questions=questions, skipped=skipped)


def batches(turns: list[Turn]) -> list[range]:
    """Whole sessions, packed in order into batches of at most BATCH turns."""
    sessions: list[range] = []
    for i, turn in enumerate(turns):
        if sessions and turns[sessions[-1].start].session == turn.session:
            sessions[-1] = range(sessions[-1].start, i + 1)
        else:
            sessions.append(range(i, i + 1))
    out: list[range] = []
    for session in sessions:
        if out and session.stop - out[-1].start <= BATCH:
            out[-1] = range(out[-1].start, session.stop)
        else:
            out.append(session)
    return out


def change(conversation: Conversation, i: int) -> dict[str, Any]:
    turn = conversation.turns[i]
    links: dict[str, Any] = {}
    if conversation.form == "linked" and i > 0 and conversation.turns[i - 1].session == turn.session:
        links = {ROLE: {"local": f"t{i - 1}"}}  # ordinary logical link: required stays false
        conversation.links += 1
    return {"id": f"t{i}", "op": "create", "content": {"text": turn.text, "links": links}, "sources": []}


def write(conversation: Conversation, actor: Any) -> float:
    """A fresh tenant and ingest key; every turn one atom. Returns seconds spent writing."""
    from atoms.api.write import answer_write
    from atoms.core.canonical import canonical
    from atoms.principal import Principal
    from atoms.services.refs import resolve_ref
    from tenants.services.keys import apikey_create
    from tenants.services.tenancy import tenant_ensure

    name = f"locomo-{conversation.sample_id}-{conversation.form}"
    tenant, _ = tenant_ensure(slug=f"{name}-{os.getpid()}", name=f"LoCoMo {conversation.sample_id} {conversation.form}",
                              actor=actor)
    key, _ = apikey_create(tenant=tenant, kind="ingest", actor=actor, name="locomo")
    conversation.caller = Principal.for_key(key)
    conversation.unit_cost = [0] * len(conversation.turns)
    started = time.perf_counter()
    for number, indexes in enumerate(batches(conversation.turns)):
        outcome = answer_write(conversation.caller, {
            "changes": [change(conversation, i) for i in indexes],
            "options": {"idempotencyKey": f"{name}-{number}"}})
        for i in indexes:
            view = outcome["changes"][f"t{i}"]
            conversation.ref_turn[view["ref"]] = i
            if outcome["review"][f"t{i}"] == "quarantined":
                conversation.quarantined.add(i)
            # The unit read renders for this atom (docs/atoms.md "Read path costs"), priced for rank-order packing.
            unit = {"links": view["links"], "provenance": view["provenance"], "ref": view["ref"],
                    "sources": view["sources"], "text": view["text"]}
            conversation.unit_cost[i] = len(canonical(unit).encode())
    seconds = time.perf_counter() - started
    for ref, i in conversation.ref_turn.items():
        if i not in conversation.quarantined:  # only indexed atoms need their id (dense ranking)
            conversation.atom_turn[resolve_ref(conversation.caller, ref, ["default"]).atom_id] = i
    return seconds


def index(conversation: Conversation) -> dict[str, Any]:
    """Encode every atom as the worker does, then build the HNSW file; timed apart."""
    from django.conf import settings

    from atoms.embedding import tenant_provider
    from atoms.services.indexing import index_drain
    from atoms.vector_index import refresh

    tenant = conversation.caller.tenant
    loaded = tenant_provider(tenant)
    assert loaded is not None, "the MiniLM provider is configured for the benchmark"
    started = time.perf_counter()
    result = index_drain(tenant=tenant, loaded=loaded, policy="default", seconds=3600.0,
                         step=settings.ATOMS_INDEX_TASK_STEP)  # as atoms.index_update runs it
    encoded = time.perf_counter()
    refresh(tenant.pk, loaded.config)
    done = time.perf_counter()
    expected = len(conversation.turns) - len(conversation.quarantined)
    if result.pending or result.indexed != expected:
        raise SystemExit(f"{conversation.sample_id} {conversation.form}: indexed {result.indexed} of {expected} atoms")
    return {"atoms": result.indexed, "drain_seconds": encoded - started, "refresh_seconds": done - encoded}


def ingest(sample: dict[str, Any], form: str, actor: Any) -> tuple[Conversation, dict[str, Any]]:
    """prepare + write + index, with a progress line; returns the conversation and its figures."""
    conversation = prepare(sample, form)
    written = write(conversation, actor)
    indexed = index(conversation)
    progress(f"{conversation.sample_id} {form}: {len(conversation.turns)} turns, {conversation.links} links, "
             f"{len(conversation.questions)} questions; written in {written:.1f} s, indexed {indexed['atoms']} atoms "
             f"in {indexed['drain_seconds']:.1f} s ({indexed['atoms'] / indexed['drain_seconds']:.0f} atoms/s)")
    return conversation, {"sample": conversation.sample_id, "form": form, "turns": len(conversation.turns),
                          "links": conversation.links,
                          "quarantined_turns": [conversation.turns[i].dia_id for i in sorted(conversation.quarantined)],
                          "questions": len(conversation.questions), "skipped_questions": conversation.skipped,
                          "write_seconds": written, **indexed}


# --- The process -------------------------------------------------------------------------------

def environment(tmp: Path) -> None:
    """SQLite and vector files in `tmp`, MiniLM offline, embedded mode (no Redis)."""
    os.environ.update(MEMORYHUB_VAR_DIR=str(tmp / "var"), LOG_LEVEL="WARNING",
                      DATABASE_URL=f"sqlite:///{tmp / 'bench.sqlite3'}", DJANGO_SETTINGS_MODULE="memoryhub.settings",
                      ATOMS_EMBEDDING="minilm", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    for name in ("REDIS_URL", "ATOMS_VECTOR_INDEX_ROOT"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))


def start(torch_threads: int) -> float:
    """django.setup, migrate, load the encoder once; returns the model load seconds."""
    import django

    django.setup()
    import torch
    from django.conf import settings
    from django.core.management import call_command

    from atoms.embedding import load_provider

    if torch_threads:
        torch.set_num_threads(torch_threads)
    progress("migrating ...")
    call_command("migrate", "--noinput", verbosity=0)
    started = time.perf_counter()
    load_provider(settings.ATOMS_EMBEDDING_PROVIDER)
    return time.perf_counter() - started
