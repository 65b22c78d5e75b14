"""The read path costs a fixed number of queries, whatever the corpus size (docs/atoms.md "Read path costs").

One bound for read and one for search hold at 100 and at 5,000 atoms. The corpus
(query_corpus) exercises every level: two candidate channels, generated candidates whose
staleness is judged, two graph levels, use state, closures two levels deep, citations and
overlapping quotes (evidence), refs issued for the first time.

Where the queries go, for the read below (two channel texts):

- request: the atom store (1: `answer_read`'s barrier check, handed to the service), the
  store again inside the snapshot (1), the savepoint and its release (2; inside the test's
  transaction: a request's own transaction has none, and on PostgreSQL opens with
  `BEGIN ISOLATION LEVEL REPEATABLE READ`, no SET statement; the last test below);
- candidates: the statistics with the corpus totals (1); the lexical lookups of every channel
  text in one statement, each reading the whole revision rows of its hits (1; a second one
  only when quarantined heads crowd a text's best k + 16, which this corpus has not; no vector
  lookup without a provider); a bulk re-read only of candidates no lexical lookup returned
  whole (none here);
- staleness of generated revisions, per level of them reached (candidates, graph levels,
  closure levels): their tokens, then the heads they watch with their upstream revisions
  (2 each);
- graph: per level at most one statement for the slots out of it with their targets' heads
  and pinned targets, its origins with their sources, and the slots into it with their heads,
  and the same for every atom that could join at that level, so that a next level is read
  already and the closures and views of what joined need no statement (1): depth 1 → 1;
- use state: the aggregate with the rows of the graph's revisions (1);
- closures and views: one recursive statement for every closure member the graph did not
  read, however deep, with their slots, their targets' heads, their origins with their
  sources and their pinned targets (none here: the graph read all of them; the test
  `test_a_read_loads_a_closure_in_one_statement_however_deep_it_goes` below);
- refs: one bulk issue (look-up, and an insert that returns the refs it made: 2);
- the receipt insert (1); a cursor reuses the store row read at the start (no query).

Measured: a read 15 queries at 100 atoms and at 5,000, a search 13 and 15 (the same on
SQLite and PostgreSQL). The read bound leaves no headroom, so that the code before the graph
read its joiners' links ahead (16) fails it; the search bound leaves two. Before the graph
read ahead, a read cost 16 and the search 14 and 16; before the lexical lookups were merged,
a read cost 17 (docs/benchmarks.md "PostgreSQL round trips
(2026-12-02)"); before the graph and closure
levels read their targets with their slots, the closure load reused the graph's slots, the
staleness heads came with the upstream revisions, and the statistics, use state and ref
issue each lost a statement, the same read cost 25 and 25 queries, the search 21 and 24;
before the slots and origins were merged, the lexical lookup returned whole rows and the
cursor reused the store row, 28 and 28, the search 24 and 27 (docs/benchmarks.md "CPU and
queries per read"). Before the first bounds the same read (run a second time, its refs
already issued) cost 101 queries at 100 atoms and 1,276 at 5,000, and the search 57 and 599.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.db import DatabaseError, OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext

from atoms.api.read import answer_read, parse_read
from atoms.api.search import answer_search
from atoms.models import AtomStore, Receipt, Ref, Revision
from atoms.principal import Principal
from atoms.services.barrier import open_store
from atoms.services.read import atoms_read
from atoms.services.refs import issue_ref
from atoms.services.snapshot import read_snapshot, retried
from tests.atoms.api import query_corpus
from tests.atoms.api.helpers import AtomsClient, create

READ_BOUND = 15
SEARCH_BOUND = 17
GROUP = 3  # the group the signals name (query_corpus.word)


def _use(host: AtomsClient, agent: AtomsClient) -> None:
    """The agent's accepted use of group GROUP's root, so reads load stored use state."""
    root = Revision.objects.get(body=f"needle root {query_corpus.word(GROUP)}")
    ref = issue_ref(Principal.for_key(agent.key), root)
    response = host.post("uses", {"binding": {"key": agent.key.public_id}, "refs": [ref], "eventId": "e"})
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("groups", [10, 500], ids=["100-atoms", "5000-atoms"])
def test_a_read_and_a_search_cost_the_same_bounded_queries_at_any_corpus_size(
        I: AtomsClient, W: AtomsClient, X: AtomsClient, groups: int,
        django_assert_max_num_queries: Any) -> None:
    query_corpus.build(I.key, W.key, X.key, groups)
    assert Revision.objects.count() == groups * query_corpus.PER_GROUP
    _use(X, W)
    # The corpus is laid out for activation both ways along every role (the contract's relation
    # weights), so the graph reads the closures' first level. The default reverse-only weights
    # (docs/atoms.md "Defaults") rank a root whose closure it did not read: one statement more.
    store = AtomStore.get_or_create_for(I.key.tenant)
    store.config = {"activation": {"relations": {role: {"forward": 1, "reverse": 1}
                                                 for role in ("next", "condition", "detail", "see", "about")}}}
    store.save(update_fields=["config"])
    caller = Principal.for_key(W.key)
    word = query_corpus.word(GROUP)
    refs_before = Ref.objects.count()
    with django_assert_max_num_queries(READ_BOUND):
        read = answer_read(caller, {"state": {"query": f"needle root {word}",
                                                         "context": f"shared middle {word}"}})
    assert Ref.objects.count() > refs_before  # refs issued for the first time, in bulk
    texts = [item["text"] for item in read["items"]]
    assert f"needle root {word}" in texts and f"detail {GROUP} of the condition" in texts  # a closure two deep
    assert json.loads(read["text"])["evidence"] and read["sources"]  # overlapping quotes, citations
    assert any(item["provenance"]["origin"] == "extraction" for item in read["items"])  # staleness judged
    with django_assert_max_num_queries(SEARCH_BOUND):
        search = answer_search(caller, {"query": f"needle root {word}"})
    assert search["items"][0]["text"] == f"needle root {word}" and "cursor" in search
    assert any("ref" in link for item in search["items"] for link in item["links"])  # link targets' refs


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_the_snapshot_is_opened_by_its_begin_and_the_connection_level_comes_back(
        I: AtomsClient, W: AtomsClient, X: AtomsClient) -> None:
    """Outside any test transaction, as a request runs it: every statement of a read and a
    search runs in REPEATABLE READ (docs/atoms.md "Candidates"), no SET TRANSACTION is sent
    after the BEGIN (the driver's BEGIN names the level: one round trip fewer), and the next
    transaction on the connection is READ COMMITTED again."""
    if connection.vendor != "postgresql":
        pytest.skip("the isolation level is PostgreSQL's")
    query_corpus.build(I.key, W.key, X.key, 2)
    caller = Principal.for_key(W.key)
    word = query_corpus.word(1)
    sent: list[str] = []
    levels: set[str] = set()

    def probe(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        sent.append(sql)
        if connection.in_atomic_block:  # the driver's own cursor: not logged, not probed again
            levels.add(connection.connection.execute("SHOW transaction_isolation").fetchone()[0])
        return result

    with connection.execute_wrapper(probe):
        answer_read(caller, {"state": {"query": f"needle root {word}", "context": f"shared middle {word}"}})
        answer_search(caller, {"query": f"needle root {word}"})
    assert levels == {"repeatable read"}
    assert not [sql for sql in sent if sql.upper().startswith("SET")]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        assert cursor.fetchone()[0] == "read committed"


def _level() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        return str(cursor.fetchone()[0])


@pytest.fixture
def autocommit_off() -> Any:
    """Django's autocommit off, as `transaction.set_autocommit(False)` leaves it; on again after."""
    transaction.set_autocommit(False)
    try:
        yield
    finally:
        if connection.connection is not None:
            transaction.rollback()
        transaction.set_autocommit(True)


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_read_with_autocommit_off_runs_at_repeatable_read_and_its_work_is_committed(
    I: AtomsClient, W: AtomsClient, X: AtomsClient
) -> None:
    """With autocommit off the transaction is the caller's (atoms/services/snapshot.py): the
    read makes it REPEATABLE READ with its first statement, and the caller's commit keeps the
    receipt and refs. Setting the driver's level (the path for autocommit on) could not be
    undone before the commit: the connection was closed and the caller's work rolled back."""
    if connection.vendor != "postgresql":
        pytest.skip("the isolation level is PostgreSQL's; SQLite has no levels to set")
    query_corpus.build(I.key, W.key, X.key, 2)
    word = query_corpus.word(1)
    caller = Principal.for_key(W.key)
    command = parse_read(caller, {"state": {"query": f"needle root {word}", "context": f"shared middle {word}"}})
    store = open_store(caller.tenant)
    receipts, refs = Receipt.objects.count(), Ref.objects.count()
    levels: set[str] = set()

    def probe(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        levels.add(connection.connection.execute("SHOW transaction_isolation").fetchone()[0])
        return result

    transaction.set_autocommit(False)
    try:
        with connection.execute_wrapper(probe):
            result = atoms_read(command, store)
        transaction.commit()
    finally:
        transaction.set_autocommit(True)
    assert levels == {"repeatable read"}
    assert Receipt.objects.filter(pk=result.receipt.pk).exists()
    assert Receipt.objects.count() == receipts + 1 and Ref.objects.count() > refs
    with transaction.atomic():
        assert _level() == "read committed"


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_read_after_a_statement_of_the_callers_transaction_raises_a_django_error(
    autocommit_off: None,
) -> None:
    """The level of a transaction that ran a statement cannot change: the error is Django's
    (a caller catching DatabaseError sees it), not the driver's."""
    if connection.vendor != "postgresql":
        pytest.skip("the isolation level is PostgreSQL's; SQLite has no levels to set")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # the caller's first statement takes the transaction's snapshot
    with pytest.raises(DatabaseError), read_snapshot():
        pass


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_an_on_commit_hook_of_the_snapshot_gets_the_connections_own_level() -> None:
    """The level is set back before the hooks run: one opening a transaction of its own does
    not run it at REPEATABLE READ."""
    if connection.vendor != "postgresql":
        pytest.skip("the isolation level is PostgreSQL's; SQLite has no levels to set")
    seen: list[str] = []

    def hook() -> None:
        with transaction.atomic():
            seen.append(_level())

    with read_snapshot():
        seen.append(_level())
        transaction.on_commit(hook)
    assert seen == ["repeatable read", "read committed"]


@pytest.mark.django_db(transaction=True)
def test_a_serialization_failure_in_the_callers_transaction_is_not_run_again(autocommit_off: None) -> None:
    """With autocommit off the transaction, and so the snapshot, is the caller's: a rerun would
    meet the same conflict, so the failure is raised at once."""
    calls: list[int] = []

    class Failure(Exception):
        sqlstate = "40001"

    @retried
    def conflicting() -> None:
        calls.append(1)
        error = OperationalError("could not serialize access")
        error.__cause__ = Failure()
        raise error

    with pytest.raises(OperationalError):
        conflicting()
    assert calls == [1]


def _chain(I: AtomsClient, name: str, length: int) -> list[str]:
    """A root `<name> root` that requires a chain of `length` atoms, each requiring the next;
    returns the texts, root first. Only the root holds `name`."""
    texts = [f"{name} root"] + [f"link {i} of the {length}-chain" for i in range(length)]
    changes = []
    for i, text in enumerate(texts):
        links = {"needs": {"local": f"{name}{i + 1}", "required": True}} if i < length else {}
        changes.append(create(f"{name}{i}", text, links))
    I.ok_write(*changes)
    return texts


def test_a_read_loads_a_closure_in_one_statement_however_deep_it_goes(I: AtomsClient, W: AtomsClient) -> None:
    """The closure levels the graph did not read come in one recursive statement
    (docs/atoms.md "Read path costs"): a root whose closure is eight atoms deep costs the read
    no more queries than one whose closure is two atoms deep (the graph reads the first of
    them: it could have joined the graph)."""
    shallow, deep = _chain(I, "walnut", 2), _chain(I, "chestnut", 8)
    caller = Principal.for_key(W.key)
    counts = {}
    for name, texts in (("walnut", shallow), ("chestnut", deep)):
        with CaptureQueriesContext(connection) as captured:
            read = answer_read(caller, {"state": {"query": name}, "options": {"tokens": 4096}})
        assert sorted(item["text"] for item in read["items"]) == sorted(texts)  # the whole closure
        counts[name] = len(captured.captured_queries)
    assert counts["chestnut"] == counts["walnut"]


def test_a_search_reads_the_links_of_its_graph_and_page_in_one_statement_per_level_beyond_the_first(
        I: AtomsClient, W: AtomsClient) -> None:
    """At depth 1, one statement reads the seeds' links and those of every atom that could
    join them, so the page's views need none; at depth 2, the first level's statement reads
    the second level ahead as well, and only the page's atom two levels away needs its links
    read (docs/atoms.md "Read path costs"). `c` links to `b`, which links to the root:
    activation flows from a link's target to its linker (docs/atoms.md "Defaults"), so `b`
    is ranked one level deep and `c` two."""
    I.ok_write(create("r", "hornbeam root"), create("b", "second note", {"see": {"local": "r"}}),
               create("c", "third note", {"see": {"local": "b"}}))
    caller = Principal.for_key(W.key)
    link_statements, texts = {}, {}
    for depth in (1, 2):
        with CaptureQueriesContext(connection) as captured:
            search = answer_search(caller, {"query": "hornbeam", "options": {"depth": depth}})
        link_statements[depth] = sum('"atoms_slot"' in query["sql"] for query in captured.captured_queries)
        texts[depth] = sorted(item["text"] for item in search["items"])
    assert texts == {1: ["hornbeam root", "second note"], 2: ["hornbeam root", "second note", "third note"]}
    assert link_statements == {1: 1, 2: 2}


# Tables that grow with the corpus: a statement of the read path may only look rows up in them.
_CORPUS_TABLES = {"atoms_atom", "atoms_revision", "atoms_slot", "atoms_origin", "atoms_lexicalposting",
                  "atoms_ref", "atoms_usestate", "atoms_receipt"}
_ALIAS = re.compile(r'(?:FROM|JOIN)\s+"?(atoms_\w+)"?(?:\s+(?:AS\s+)?(?!ON\b|WHERE\b|CROSS\b|LEFT\b|JOIN\b)(\w+))?')
_WALK = re.compile(r"^(?:SCAN (\w+)(?: USING (?:COVERING )?INDEX \w+)?$"
                   r"|SEARCH (\w+) USING (?:COVERING )?INDEX \w+ \(tenant_id=\?\))")


def _walked_tables(sql: str, plan: list[str]) -> list[str]:
    """The corpus tables a SQLite plan scans whole or walks by tenant alone."""
    tables = {}
    for table, alias in _ALIAS.findall(sql):
        tables[alias or table] = table
        tables[table] = table
    out = []
    for line in plan:
        found = _WALK.match(line)
        name = found and (found[1] or found[2])
        if name and tables.get(name) in _CORPUS_TABLES:
            out.append(f"{tables[name]}: {line}")
    return out


def test_on_sqlite_no_statement_of_a_read_or_a_search_walks_a_corpus_table(
        I: AtomsClient, W: AtomsClient, X: AtomsClient) -> None:
    """SQLite plans without statistics, from the statement's shape alone, so a join order that
    starts from the tenant's rows stays that way at any size (a read of the 100k corpus once
    took 1.7 s that way: docs/benchmarks.md "Fewer link statements per read and search"). Every
    statement of a read and a search must look its corpus rows up by key (docs/atoms.md "Read
    path costs"): no plain scan, and no walk of an index on the tenant alone."""
    if connection.vendor != "sqlite":
        pytest.skip("the plans checked are SQLite's; PostgreSQL plans from statistics")
    query_corpus.build(I.key, W.key, X.key, 4)
    caller = Principal.for_key(W.key)
    word = query_corpus.word(1)
    with CaptureQueriesContext(connection) as captured:
        answer_read(caller, {"state": {"query": f"needle root {word}", "context": f"shared middle {word}"}})
        answer_search(caller, {"query": f"needle root {word}", "options": {"depth": 2}})
        answer_read(caller, {"state": {"query": f"needle condition {word}"}, "options": {"depth": 0}})
    statements = [q["sql"] for q in captured.captured_queries if q["sql"].startswith(("SELECT", "WITH"))]
    assert any(sql.startswith("WITH RECURSIVE") for sql in statements)  # the closure statement ran
    assert any(" n(id, atom_id) AS " in sql for sql in statements)  # and the graph's look-ahead
    walks = []
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            walks += _walked_tables(sql, [row[3] for row in cursor.fetchall()])
    assert walks == []


def test_the_plan_check_finds_a_walk_of_the_tenants_atoms() -> None:
    """The check above on the plan line of the statement that once walked them."""
    sql = ('WITH n(id, atom_id) AS (SELECT h.id, h.atom_id FROM "atoms_slot" s JOIN "atoms_atom" a '
           'ON a.id = s.target_atom_id JOIN "atoms_revision" h ON h.id = a.head_id) SELECT id FROM n')
    plan = ["SEARCH a USING INDEX atoms_atom_tenant_id_c0d5486e (tenant_id=?)",
            "SEARCH h USING INDEX sqlite_autoindex_atoms_revision_1 (id=?)", "SCAN n", "SCAN (subquery-4)"]
    assert _walked_tables(sql, plan) == ["atoms_atom: SEARCH a USING INDEX atoms_atom_tenant_id_c0d5486e (tenant_id=?)"]
    assert _walked_tables('SELECT 1 FROM "atoms_slot" s', ["SCAN s"]) == ["atoms_slot: SCAN s"]
    assert _walked_tables('SELECT 1 FROM "atoms_slot" s', ["SCAN s USING COVERING INDEX atoms_slot_target"]) \
        == ["atoms_slot: SCAN s USING COVERING INDEX atoms_slot_target"]
