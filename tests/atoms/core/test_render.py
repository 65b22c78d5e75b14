"""Render format 2, verified quotes, evidence and cost, against the worked example of
docs/atoms.md "Selection utility (read)" (unit bytes, cost(S) = 45 + Σ unit bytes + (|S| - 1)) and the
quote example of worked_example.py."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoms.core.canonical import canonical
from atoms.core.closure import AtomNode, OriginSpan
from atoms.core.render import (
    EMPTY_WRAPPER_BYTES,
    Layout,
    Quote,
    evidence_entry,
    merged_sources,
    overlap_clusters,
    render,
    render_order,
    unit,
    unit_json,
    verified_quote,
)
from tests.atoms.core.worked_example import (
    E1,
    E2,
    EXAMPLE,
    EXAMPLE_CLOSURES,
    NAME_OF,
    RANKING,
    SOURCE,
    TEXT_1100,
    TEXT_4096,
    TEXT_QUOTES,
    citation,
    extraction_of,
    make_node,
    quote_universes,
    ref,
)

EXAMPLE_LAYOUT = Layout(EXAMPLE.values())


def ids_of(names: str) -> list[str]:
    return [EXAMPLE[name].revision_id for name in names]


# --- the worked example: unit sizes, cost and render --------------------------------------

def test_the_units_of_the_worked_example_have_the_listed_sizes() -> None:
    sizes = {name: len(canonical(unit(node)).encode()) for name, node in EXAMPLE.items()}
    assert sizes == {"A": 290, "B": 284, "C": 178, "D": 165, "E": 284}
    assert {name: EXAMPLE_LAYOUT.plain_size[node.revision_id] for name, node in EXAMPLE.items()} == sizes


def test_the_empty_wrapper_is_45_bytes_and_the_empty_set_costs_nothing() -> None:
    assert len(canonical({"evidence": [], "formatVersion": 2, "memory": []})) == EMPTY_WRAPPER_BYTES == 45
    assert EXAMPLE_LAYOUT.cost([]) == 0
    empty = EXAMPLE_LAYOUT.render([])
    assert (empty.text, empty.token_count, empty.sources) == ("", 0, ())


@pytest.mark.parametrize(("names", "cost"), [("A", 335), ("E", 329), ("BD", 495), ("C", 223), ("D", 210),
                                             ("AE", 620), ("AEBD", 1071), ("AECD", 965), ("AEC", 799),
                                             ("AEBDC", 1250)])
def test_it_prices_sets_as_the_wrapper_plus_units_plus_commas(names: str, cost: int) -> None:
    assert EXAMPLE_LAYOUT.cost(ids_of(names)) == cost
    assert 45 + sum(EXAMPLE_LAYOUT.plain_size[key] for key in ids_of(names)) + len(names) - 1 == cost


def test_it_orders_units_by_walking_the_ranking_through_each_closure() -> None:
    ranking = [node.revision_id for node in RANKING]
    order = render_order(ids_of("ABCDE"), ranking, EXAMPLE_CLOSURES)
    assert [NAME_OF[key] for key in order] == list("AEBDC")
    # D without its root B still comes from its own rank; B without D is a leftover.
    assert [NAME_OF[key] for key in render_order(ids_of("DA"), ranking, EXAMPLE_CLOSURES)] == ["A", "D"]
    assert [NAME_OF[key] for key in render_order(ids_of("BC"), ranking, EXAMPLE_CLOSURES)] == ["C", "B"]


def test_it_renders_the_worked_example_at_4096_and_1100_tokens_byte_for_byte() -> None:
    full = EXAMPLE_LAYOUT.render(ids_of("AEBDC"))
    assert full.text == TEXT_4096 and full.token_count == 1250
    partial = EXAMPLE_LAYOUT.render(ids_of("AEBD"))
    assert partial.text == TEXT_1100 and partial.token_count == 1071
    assert partial.sources == () and partial.quoted == {}
    assert render([EXAMPLE[name] for name in "AEBD"]).text == TEXT_1100


# --- verified quotes: a source and two overlapping extractions -----------------------------

def test_the_citations_carry_the_listed_quote_digests() -> None:
    assert E1.origins[0].quote_digest == "7bf52afd1d2eb936aaa7e54e67ae18b8fb24efb51e7edea259e6571b85614c96"
    assert E2.origins[0].quote_digest == "259e7f1ad88e897370e6bc8269764a17289fb80012f8684bffecab7d02179a93"


def test_it_merges_overlapping_quotes_into_one_evidence_range() -> None:
    rendered = render([E1, E2, SOURCE])
    assert rendered.text == TEXT_QUOTES and rendered.token_count == 984
    assert rendered.text.count("BBBB") == 1
    assert list(rendered.sources) == [{"end": 12, "ref": ref(11), "start": 0}]
    assert set(rendered.quoted) == {E1.revision_id, E2.revision_id, SOURCE.revision_id}
    assert rendered.quoted[E1.revision_id].start == E1.origins[0].start


def test_two_extractions_alone_still_share_the_evidence_and_one_alone_keeps_its_text() -> None:
    pair = render([E1, E2])
    assert pair.token_count == 760
    assert json.loads(pair.text)["evidence"] == [
        {"ranges": [{"end": 12, "start": 0, "text": "AAAABBBBCCCC"}], "ref": ref(11), "unit": "utf8"}]
    single = render([E1])
    assert single.token_count == 269
    body = json.loads(single.text)
    assert body["evidence"] == [] and body["memory"][0]["text"] == "AAAABBBB" and "quote" not in body["memory"][0]


def test_a_source_quotes_its_whole_body_and_an_exact_extraction_its_span() -> None:
    assert verified_quote(SOURCE) == Quote(SOURCE.revision_id, ref(11), 0, 12, b"AAAABBBBCCCC")
    assert verified_quote(E2) == Quote(SOURCE.revision_id, ref(11), 4, 12, b"BBBBCCCC")


@pytest.mark.parametrize("change", [
    {"text": "AAAABBBX"},  # body differs from the cited bytes
    {"text": "AAAABBBBB"},  # longer than the span
    {"origin": "derived"},  # only extraction atoms quote
    {"origins": ()},
    {"origins": (citation(SOURCE, 0, 8), citation(SOURCE, 4, 12))},  # more than one origin
    {"origins": (dataclasses.replace(citation(SOURCE, 0, 8), ref=None),)},  # source unreadable
])
def test_other_atoms_are_not_verified_quotes(change: dict[str, object]) -> None:
    assert verified_quote(dataclasses.replace(E1, **change)) is None  # type: ignore[arg-type]


def test_touching_quotes_do_not_overlap_and_keep_their_text() -> None:
    rendered = render([extraction_of(12, SOURCE, 0, 4), extraction_of(13, SOURCE, 4, 8)])
    body = json.loads(rendered.text)
    assert body["evidence"] == [] and [u["text"] for u in body["memory"]] == ["AAAA", "BBBB"]
    assert list(rendered.sources) == [{"end": 8, "ref": ref(11), "start": 0}]  # touching spans merge here


def test_each_cluster_is_one_range_with_the_gap_before_it() -> None:
    source = make_node(20, "0123456789abcdef", producer="key:ingest")
    parts = [extraction_of(n, source, start, end) for n, (start, end) in
             enumerate([(13, 16), (4, 8), (12, 14), (6, 10), (0, 2)], start=21)]
    body = json.loads(render(parts).text)
    assert body["evidence"] == [{"ranges": [
        {"end": 10, "omittedBefore": 4, "start": 4, "text": "456789"},
        {"end": 16, "omittedBefore": 2, "start": 12, "text": "cdef"},
    ], "ref": source.ref, "unit": "utf8"}]
    assert [("text" in u, "quote" in u) for u in body["memory"]] == [(False, True)] * 4 + [(True, False)]


def test_evidence_lists_sources_by_first_appearance() -> None:
    other = make_node(30, "XXXXYYYY", producer="key:ingest")
    order = [extraction_of(31, other, 0, 6), extraction_of(21, SOURCE, 0, 8), extraction_of(22, SOURCE, 2, 6),
             extraction_of(32, other, 4, 8)]
    body = json.loads(render(order).text)
    assert [entry["ref"] for entry in body["evidence"]] == [other.ref, SOURCE.ref]
    assert body["evidence"][0]["ranges"] == [{"end": 8, "start": 0, "text": "XXXXYYYY"}]


def test_an_empty_quote_inside_a_span_overlaps_it() -> None:
    empty = extraction_of(14, SOURCE, 2, 2)
    assert verified_quote(empty) is not None
    body = json.loads(render([E1, empty]).text)
    assert body["evidence"][0]["ranges"] == [{"end": 8, "start": 0, "text": "AAAABBBB"}]
    assert all("quote" in u for u in body["memory"])
    # At the edge of a span it touches nothing.
    assert json.loads(render([E1, extraction_of(15, SOURCE, 8, 8)]).text)["evidence"] == []


def test_overlap_clusters_only_group_strictly_overlapping_quotes() -> None:
    def q(start: int, end: int) -> Quote:
        return Quote("s", "ref:s", start, end, b"x" * (end - start))

    quotes = {"a": q(0, 4), "b": q(4, 8), "c": q(6, 9), "d": q(7, 7), "e": q(4, 4), "f": q(20, 21)}
    assert overlap_clusters(quotes) == [["b", "c", "d"]]


def test_quoted_units_keep_their_sources_and_multibyte_spans_stay_whole() -> None:
    source = make_node(40, "日本語のテキスト", producer="key:ingest")
    first, second = extraction_of(41, source, 0, 9), extraction_of(42, source, 6, 15)
    body = json.loads(render([first, second]).text)
    assert body["evidence"][0]["ranges"] == [{"end": 15, "start": 0, "text": "日本語のテ"}]
    assert body["memory"][0]["sources"] == [{"end": 9, "ref": source.ref, "start": 0}]
    assert body["memory"][0]["quote"] == {"end": 9, "ref": source.ref, "start": 0, "unit": "utf8"}


def test_merged_sources_skip_unreadable_citations() -> None:
    hidden = dataclasses.replace(E1, origins=(OriginSpan("revision:hidden", 0, 3, "d", None),))
    assert merged_sources([hidden, E2, E1]) == [{"end": 12, "ref": ref(11), "start": 0}]


# --- properties ---------------------------------------------------------------------------

@given(quote_universes(), st.data())
def test_cost_is_the_byte_length_of_the_render_in_any_order(universe: list[AtomNode], data: st.DataObject) -> None:
    layout = Layout(universe)
    chosen = data.draw(st.lists(st.sampled_from(universe), unique_by=lambda node: node.revision_id))
    order = [node.revision_id for node in chosen]
    rendered = layout.render(order)
    assert rendered.token_count == len(rendered.text.encode()) == layout.cost(order)
    assert layout.render(list(reversed(order))).token_count == rendered.token_count
    if not order:
        assert rendered.text == ""
        return
    body = json.loads(rendered.text)
    assert [u["ref"] for u in body["memory"]] == [node.ref for node in chosen]
    by_ref = {node.ref: node for node in universe}
    for entry in body["evidence"]:
        previous = 0
        for item in entry["ranges"]:
            assert by_ref[entry["ref"]].body[item["start"]:item["end"]] == item["text"].encode()
            assert item.get("omittedBefore", 0) == item["start"] - previous and item["start"] >= previous
            previous = item["end"]
    for node, shown in zip(chosen, body["memory"], strict=True):
        assert ("quote" in shown) == (node.revision_id in rendered.quoted) == ("text" not in shown)


def _page_as_dicts(layout: Layout, order: list[str]) -> str:
    """render(S) the long way: the page as dicts (units by `unit`, E entries by
    `evidence_entry`, sources by first quoting unit), printed by `canonical`."""
    by_source: dict[str, dict[str, Quote]] = {}
    for key in order:
        if key in layout.quotes:
            by_source.setdefault(layout.quotes[key].source_revision_id, {})[key] = layout.quotes[key]
    clusters = {source: found for source, quotes in by_source.items() if (found := overlap_clusters(quotes))}
    quoted = {key for found in clusters.values() for cluster in found for key in cluster}
    memory, evidence = [], []
    for key in order:
        quote = layout.quotes[key] if key in quoted else None
        memory.append(unit(layout.nodes[key], quote))
        if quote is not None and quote.source_revision_id in clusters:
            found = clusters.pop(quote.source_revision_id)
            quotes = by_source[quote.source_revision_id]
            evidence.append(evidence_entry(quote.ref, [[quotes[k] for k in cluster] for cluster in found]))
    return canonical({"evidence": evidence, "formatVersion": 2, "memory": memory})


@given(quote_universes(), st.data())
def test_the_joined_render_is_the_page_printed_by_canonical(universe: list[AtomNode], data: st.DataObject) -> None:
    layout = Layout(universe)
    chosen = data.draw(st.lists(st.sampled_from(universe), unique_by=lambda node: node.revision_id, min_size=1))
    order = [node.revision_id for node in chosen]
    rendered = layout.render(order)
    assert rendered.text == _page_as_dicts(layout, order)
    page = json.loads(rendered.text)
    assert page["memory"] == [unit(node, rendered.quoted.get(node.revision_id)) for node in chosen]


# Texts with everything canonical JSON escapes or joins: quotes, backslashes, C0 controls,
# DEL, lone and paired surrogates, astral and combining characters.
AWKWARD = st.text(alphabet=st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\ud83d", "\ude00", "a", "é",
                                            "日", "😀", "\u0301", "\u2028", " "]), max_size=12)
BODY = AWKWARD.filter(lambda text: not any("\ud800" <= char <= "\udfff" for char in text))  # bodies are UTF-8


@st.composite
def awkward_nodes(draw: st.DrawFn) -> AtomNode:
    links = draw(st.lists(st.fixed_dictionaries(
        {"at": st.sampled_from(["logical", "observed"]), "orderKey": AWKWARD, "required": st.booleans(),
         "role": AWKWARD},
        optional={"ref": AWKWARD, "unavailable": st.just(True)}), max_size=3))
    origins = draw(st.lists(st.builds(OriginSpan, source_revision_id=AWKWARD, start=st.integers(0, 2**40),
                                      end=st.integers(0, 2**40), quote_digest=AWKWARD,
                                      ref=st.one_of(st.none(), AWKWARD)), max_size=3))
    return AtomNode(revision_id="revision:x", atom_id="atom:x", ref=draw(AWKWARD), text=draw(BODY),
                    origin=draw(AWKWARD), producer=draw(AWKWARD), links=tuple(links), origins=tuple(origins))


@given(awkward_nodes(), st.booleans(), st.integers(0, 2**53), st.integers(0, 2**53))
def test_the_unit_writer_prints_exactly_what_canonical_prints(node: AtomNode, quoted: bool, start: int,
                                                             end: int) -> None:
    quote = Quote(source_revision_id="revision:s", ref=node.ref + "é", start=start, end=end, data=b"") if quoted else None
    assert unit_json(node, quote) == canonical(unit(node, quote))
