"""The BM25 statistics of a request's terms over its read policies (docs/atoms.md "Lexical index"
and "Candidates"): what the lexical channel ranks by and the core scores with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from atoms.core.bm25 import Statistics
from atoms.models import LexicalCorpus, LexicalTerm
from memoryhub.prepared import one_of, prepared_cursor

STATISTICS_CHUNK = 1_000


def load_statistics(tenant_id: int, policies: Sequence[str], terms: Sequence[str]) -> Statistics:
    """ΣN, ΣL and Σn_t over `policies` for these term keys: one query for up to
    STATISTICS_CHUNK terms, the corpus totals riding along with the first chunk's terms
    (each statement costs a PostgreSQL round trip; docs/atoms.md "Read path costs")."""
    if not policies:
        return Statistics(docs=0, length=0)
    policies = list(policies)
    terms = list(terms)
    corpus = connection.ops.quote_name(LexicalCorpus._meta.db_table)
    term_table = connection.ops.quote_name(LexicalTerm._meta.db_table)
    docs = length = 0
    df: dict[str, int] = {}
    # Chunks keep every statement far below the databases' parameter limits (a long text can
    # have tens of thousands of terms); a normal request is one chunk. NULL takes the term
    # column's type on both databases.
    policy_is, policy_params = one_of(policies)
    with prepared_cursor() as cursor:
        for start in range(0, max(1, len(terms)), STATISTICS_CHUNK):
            chunk = terms[start:start + STATISTICS_CHUNK]
            parts: list[str] = []
            params: list[Any] = []
            if start == 0:
                parts.append(f"SELECT NULL, docs, length FROM {corpus} "  # noqa: S608
                             f"WHERE tenant_id = %s AND {policy_is('policy')}")
                params += [tenant_id, *policy_params]
            if chunk:
                term_is, term_params = one_of(chunk)
                parts.append(f"SELECT term, docs, 0 FROM {term_table} "  # noqa: S608
                             f"WHERE tenant_id = %s AND {policy_is('policy')} AND {term_is('term')}")
                params += [tenant_id, *policy_params, *term_params]
            cursor.execute(" UNION ALL ".join(parts), params)
            for term, count, total in cursor.fetchall():
                if term is None:
                    docs += count
                    length += total
                else:
                    df[term] = df.get(term, 0) + count
    return Statistics(docs=docs, length=length, df=df)
