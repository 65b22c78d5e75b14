"""The full-text prefilter of the candidate provider (atoms.md §6.3), per database.

Seed match is substring matching of word tokens in the NFKC-lowercased atom text
(`atoms.core.text`), so a word index (FTS5 unicode61, PostgreSQL tsvector) would miss a
token inside a longer word (`brew` in `brewing`, `ing` in it too). Both backends therefore
index character trigrams, and the index only narrows the heads the core then scores itself.

SQLite: an FTS5 table with the trigram tokenizer over *folded* head bodies, where folding is
Python's own NFKC + lower (registered as the SQL function `atoms_match_fold` on every
connection), so a trigram phrase query is exactly "the folded text contains the token".
Tokens under three characters (CJK bigrams, "a") cannot be trigram-queried and are matched
with instr() over the same folded text. The prefilter is exact.

PostgreSQL cannot run Python, and its lower() depends on the collation (and handles final
sigma, dotted I and the like differently from Python). The GIN trigram index covers
`lower(normalize(body, NFKC) COLLATE "C")`: ASCII lowering only, which equals Python's
folding for every body made of ASCII and caseless characters (CJK, kana, Hangul,
punctuation, full-width forms that NFKC maps to ASCII). Any other body is "unfolded" and
always handed to the core, which decides in Python; a partial index lists those heads. The
prefilter is therefore a superset, never a miss.

The SQL below is also spelled out in migration 0003_fulltext; a test keeps the two equal,
because PostgreSQL only uses an expression or partial index when the query repeats it.
"""

from __future__ import annotations

from typing import Any

from atoms.core.text import normalize_for_match

FOLD_FUNCTION = "atoms_match_fold"
FTS_TABLE = "atoms_revision_fts"
ROWID_TABLE = "atoms_revision_fts_rowid"
# FTS5 trigram phrase queries need at least this many characters.
TRIGRAM = 3

PG_FOLDED = 'lower(normalize(body, NFKC) COLLATE "C")'
# Bodies with a character outside ASCII and the caseless ranges below may fold differently
# in PostgreSQL than in Python; the core checks them itself.
PG_UNFOLDED = (r"body ~ '[^\u0001-\u007f\u2000-\u206f\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
               r"\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002ffff]'")


def fold(text: str | None) -> str | None:
    """The folded text the SQLite index holds (None stays None, as SQL NULL)."""
    return None if text is None else normalize_for_match(text)


def register_sqlite_functions(raw_connection: Any) -> None:
    """Make `atoms_match_fold` available on a sqlite3 connection (the index triggers call it)."""
    raw_connection.create_function(FOLD_FUNCTION, 1, fold, deterministic=True)


def on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created receiver: every SQLite connection Django opens gets the function,
    so writes to atoms_revision never meet a trigger calling an unknown function."""
    if connection.vendor == "sqlite":
        register_sqlite_functions(connection.connection)
