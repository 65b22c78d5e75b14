"""The atom picker of the edit form's "Add a link" (docs/atoms.md "Review UI"): find a link
target by typing part of its text instead of pasting its id.

`GET t/<slug>/atoms/<atom id>/link-targets?q=…` answers up to LIMIT of the tenant's atoms
whose text matches, best first, the atom itself left out. htmx asks for the `picker-results`
partial: one button per atom that fills the form's target id field (static/js/atom-picker.js).
Without htmx the whole page lists the same atoms with their ids and links, so the plain id
field is all a person without JavaScript needs.

The ranking is search's own pipeline (`recall`: the lexical index, the semantic channel when
the tenant has a provider, activation) through the read-only ranking the atom browser
shares (atoms/services/ranking_readonly.py), run at depth 0 so only atoms whose text
matches come back, as the signed-in person with the person's policies. Unlike
`atoms_search` (a receipt and refs for every page) it writes nothing: no receipt, no ref,
no cursor, no use. A person typing would otherwise leave a receipt per keystroke. Like search it finds active heads only, never quarantined ones (and approved ones
only when the tenant requires approval); other targets can still be named by id.
"""

from __future__ import annotations

from django.db.models import Sum
from django.http import HttpResponse
from django.views.decorators.http import require_GET

from atoms.core.ids import is_id_of
from atoms.core.text import distinct_terms, is_blank
from atoms.errors import AtomError
from atoms.models import LexicalTerm, Revision
from atoms.principal import Principal
from atoms.services.ranking_readonly import rank
from atoms.ui.common import atom_or_404, barrier_response, error_text, person_of
from tenants.models import Role
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest

PICKER = "atoms/picker.html"
LIMIT = 10
MAX_QUERY = 200
COMPLETIONS = 5  # index terms the last, unfinished word may stand for
MIN_PREFIX = 2


def completions(person: Principal, policies: tuple[str, ...], query: str) -> list[str]:
    """The commonest index terms that start with the query's last word, when the person is
    still typing it: the lexical index matches whole words only, so "espr" alone finds
    nothing. Counts come from the statistics of the person's own policies."""
    if query[-1:].isspace():
        return []
    words = query.split()
    terms = distinct_terms(words[-1]) if words else []
    if len(terms) != 1 or len(terms[0]) < MIN_PREFIX:
        return []  # CJK text is already indexed by bigrams and single characters
    prefix = terms[0]
    rows = (LexicalTerm.objects.filter(tenant=person.tenant, policy__in=policies, term__startswith=prefix)
            .exclude(term=prefix).values("term").annotate(n=Sum("docs")).order_by("-n", "term")[:COMPLETIONS])
    return [row["term"] for row in rows]


def link_targets(person: Principal, query: str, *, exclude: str = "", limit: int = LIMIT) -> list[Revision]:
    """Heads matching `query`, best first; reads only. An atom id finds that atom whatever
    its status (pasting an id keeps working)."""
    query = query[:MAX_QUERY]
    if is_blank(query):
        return []
    if is_id_of(query.strip(), "atom"):
        head = Revision.objects.filter(tenant=person.tenant, atom_id=query.strip(), is_head=True).first()
        return [head] if head is not None and head.atom_id != exclude else []
    signal = " ".join([query.strip(), *completions(person, person.read_policies, query)])
    ranking = rank(person, signal, depth=0)
    # Stale atoms matched too (search sets them aside from the ranking); they are fine targets.
    found: dict[str, Revision] = {}
    for revision in [revision for revision, _ in ranking.entries] + ranking.stale:
        if revision.atom_id != exclude:
            found.setdefault(revision.atom_id, revision)
    return list(found.values())[:limit]


@tenant_view(Role.REVIEWER)
@require_GET
def atom_link_targets(request: TenantRequest, atom_id: str) -> HttpResponse:
    """Atoms to link `atom_id` to, for people who may edit it (reviewers and admins)."""
    closed = barrier_response(request)
    if closed is not None:
        return closed
    atom = atom_or_404(request, atom_id)
    query = request.GET.get("q", "")[:MAX_QUERY]
    context = {"atom": atom, "query": query.strip(), "results": [], "picker_error": ""}
    if not is_blank(query):
        try:
            context["results"] = link_targets(person_of(request), query, exclude=atom.id)
        except AtomError as error:
            context["picker_error"] = error_text(error)
    return render_page(request, PICKER, context, partial="picker-results")
