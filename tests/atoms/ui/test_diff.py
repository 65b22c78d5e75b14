"""Revision diffs (atoms/ui/diff.py): pure, no database."""

from __future__ import annotations

import re

from atoms.ui import diff
from atoms.ui.diff import Row, Segment, counts, diff_rows, inline_diff, render_table, words


def test_the_module_imports_nothing_from_django():
    source = open(diff.__file__, encoding="utf-8").read()
    assert not re.search(r"^\s*(from|import)\s+(django|atoms\.models|tenants|memoryhub)", source, re.MULTILINE)


def test_words_split_a_line_without_losing_anything():
    line = "Alice takes her coffee, black.  日本語!"
    assert "".join(words(line)) == line
    assert words("a, b") == ["a", ",", " ", "b"]


def test_one_changed_word_is_one_deletion_and_one_insertion():
    old, new = inline_diff("Alice takes her coffee black.", "Alice takes her tea black.")
    assert old == (Segment("Alice takes her "), Segment("coffee", changed=True), Segment(" black."))
    assert new == (Segment("Alice takes her "), Segment("tea", changed=True), Segment(" black."))


def test_equal_texts_give_only_equal_rows():
    rows = diff_rows("a\nb", "a\nb")
    assert [r.kind for r in rows] == ["equal", "equal"] and counts(rows) == (0, 0)


def test_changed_inserted_and_deleted_lines_are_numbered_on_their_side():
    rows = diff_rows("keep\nold line\ngone", "keep\nnew line\nadded\nmore")
    assert [(r.kind, r.old_number, r.new_number) for r in rows] == [
        ("equal", 1, 1), ("replace", 2, 2), ("replace", 3, 3), ("insert", None, 4)]
    assert counts(rows) == (3, 2)
    only_deleted = diff_rows("a\nb\nc", "a")
    assert [(r.kind, r.old_number, r.new_number) for r in only_deleted] == [
        ("equal", 1, 1), ("delete", 2, None), ("delete", 3, None)]


def test_an_empty_text_on_either_side():
    assert diff_rows("", "") == []
    assert [r.kind for r in diff_rows("", "x")] == ["insert"]
    assert [r.kind for r in diff_rows("x", "")] == ["delete"]


def test_the_table_marks_deletions_and_insertions():
    html = render_table(diff_rows("I like coffee.", "I like tea."), old_label="Revision 1", new_label="Revision 2")
    assert html.startswith('<table class="diff" data-testid="diff-table">')
    assert "<caption class=\"sr-only\">Changes from Revision 1 to Revision 2</caption>" in html
    assert '<td class="del">I like <del>coffee</del>.</td>' in html
    assert '<td class="ins">I like <ins>tea</ins>.</td>' in html
    assert '<th scope="col">Revision 1</th>' in html


def test_the_table_escapes_every_text():
    html = render_table(diff_rows("<b>x</b>", '<b>x</b>\n<script>alert("y")</script>'), old_label="<i>", new_label="&")
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;script&gt;" in html and "&lt;b&gt;" in html and "Changes from &lt;i&gt; to &amp;" in html


def test_rows_without_a_side_leave_its_cells_empty():
    html = render_table([Row("insert", None, 1, new=(Segment("n", changed=True),))], old_label="a", new_label="b")
    assert '<tr class="insert"><td class="num"></td><td class="same"></td><td class="num">1</td><td class="ins"><ins>n</ins></td></tr>' in html
    assert "Both texts are empty." in render_table([], old_label="a", new_label="b")
