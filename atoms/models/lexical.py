"""The lexical index: BM25 postings of active heads and per-(tenant, policy) statistics
(docs/atoms.md "Lexical index").

Core data, not a projection: kept in the write transaction of every head change (write,
revise, retire, purge), so a read's statistics, channel hits and re-read come from one
snapshot. `manage.py atoms_lexicon --check` recomputes everything from the heads and
compares; `--rebuild` rewrites it.

Terms are stored as `atoms.core.bm25.term_key`: the term itself, or a digest when its UTF-8
form is long, so every key fits an ordinary b-tree column on both databases.
"""

from __future__ import annotations

from django.db import models

from tenants.models import Tenant


class LexicalPosting(models.Model):
    """One (active head, term): the term's count in the head's body and the body's length.
    Policy and atom id are copied from the head so the channel needs no join to rank."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    policy = models.CharField(max_length=128)
    term = models.CharField(max_length=64)
    revision_id = models.CharField(max_length=64)
    atom_id = models.CharField(max_length=64)
    tf = models.PositiveIntegerField()
    length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            # The channel's lookup: a term's postings inside the reader's policies. Covering,
            # so ranking reads the index alone; read backwards it lists the best BM25 weights
            # of one term first (tf descending, then length ascending).
            models.Index(fields=["tenant", "term", "policy", "tf", "-length", "revision_id", "atom_id"],
                         name="atoms_post_lookup"),
            models.Index(fields=["revision_id"], name="atoms_post_revision"),
        ]

    def __str__(self) -> str:
        return f"posting of {self.revision_id}"


class LexicalTerm(models.Model):
    """n_t: how many active heads of (tenant, policy) contain the term."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    policy = models.CharField(max_length=128)
    term = models.CharField(max_length=64)
    docs = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "policy", "term"], name="atoms_term_unique")]
        indexes = [models.Index(fields=["tenant", "term", "policy", "docs"], name="atoms_term_lookup")]

    def __str__(self) -> str:
        return f"term statistics of {self.policy}"


class LexicalCorpus(models.Model):
    """N and L of (tenant, policy): active heads and the sum of their term counts, with the
    Unicode version their terms were made with (a different one means: rebuild)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    policy = models.CharField(max_length=128)
    docs = models.BigIntegerField(default=0)
    length = models.BigIntegerField(default=0)
    unicode_version = models.CharField(max_length=16)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "policy"], name="atoms_corpus_unique")]

    def __str__(self) -> str:
        return f"corpus statistics of {self.policy}"
