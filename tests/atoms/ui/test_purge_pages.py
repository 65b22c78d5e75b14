"""Purge pages (admins only): dry-run preview, confirmed start as a task, progress, receipt."""

from __future__ import annotations

import pytest

from atoms.api.purge import answer_purge
from atoms.models import Atom, AtomStore, ErasureReceipt, PurgedAtom, Revision
from atoms.principal import Principal
from atoms.services.purge_slices import purge_in_slices
from memoryhub.digests import digest_of
from memoryhub.models import AuditEvent
from tests.atoms.ui.tools_helpers import HX, cited_pair, write


def purge_url(atom_id: str, rest: str = "", slug: str = "acme") -> str:
    return f"/t/{slug}/atoms/{atom_id}/purge{rest}"


def confirm(client, atom_ids: list[str], atom_id: str, hx: bool = False, **extra):  # type: ignore[no-untyped-def]
    data = {"confirm": "on", "affected": digest_of(sorted(atom_ids)), **extra}
    return client.post(purge_url(atom_id), data, **({"headers": HX} if hx else {}))


def raise_barrier(tenant, atom_id: str) -> None:  # type: ignore[no-untyped-def]
    """What the confirmed request does before the task runs: the barrier, no erasing."""
    answer_purge(Principal.for_person(tenant, "alice"), {"atomId": atom_id, "options": {"maxWork": 0}})


@pytest.fixture
def pair(acme):  # type: ignore[no-untyped-def]
    return cited_pair(acme)


def test_the_preview_lists_the_atom_and_its_dependants_and_changes_nothing(client, acme, alice, pair):
    source, quote = pair
    client.force_login(alice)
    before = (Atom.objects.count(), Revision.objects.count(), AuditEvent.objects.count())
    response = client.get(purge_url(source))
    assert response.status_code == 200
    content = response.content.decode()
    assert content.count('data-testid="affected-atom"') == 2
    assert source in content and quote in content
    assert "The vault code is 4-8-15-16." in content and "A quote of the vault code." in content
    assert '<dd data-testid="legacy">no</dd>' in content
    assert f'name="affected" value="{digest_of(sorted([source, quote]))}"' in content
    assert "Purge 2 atoms" in content
    assert (Atom.objects.count(), Revision.objects.count(), AuditEvent.objects.count()) == before
    assert not AtomStore.get_or_create_for(acme).purge_barrier


@pytest.mark.parametrize("who", ["bob", "carol"])
def test_reviewers_and_viewers_may_not_purge(request, client, acme, pair, who):
    source, quote = pair
    client.force_login(request.getfixturevalue(who))
    assert client.get(purge_url(source)).status_code == 403
    assert confirm(client, [source, quote], source).status_code == 403
    assert client.get(purge_url(source, "/progress")).status_code == 403
    assert client.post(purge_url(source, "/resume")).status_code == 403
    assert Atom.objects.filter(id=source).exists() and not AtomStore.get_or_create_for(acme).purge_barrier


def test_another_tenants_atom_is_not_found(client, acme, globex, dave, pair):
    source, quote = pair
    client.force_login(dave)
    assert client.get(purge_url(source)).status_code == 404  # not a member of acme
    assert client.get(purge_url(source, slug="globex")).status_code == 404  # not globex's atom
    assert confirm(client, [source, quote], source).status_code == 404
    assert client.get(purge_url(source, "/progress", slug="globex")).status_code == 404
    assert Atom.objects.filter(id=source).exists()


def test_an_unknown_atom_is_not_found(client, acme, alice):
    client.force_login(alice)
    assert client.get(purge_url("atom:00000000-0000-4000-8000-000000000000")).status_code == 404
    assert client.get(purge_url("nonsense")).status_code == 404


def test_confirming_needs_the_box_ticked(client, acme, alice, pair):
    source, _ = pair
    client.force_login(alice)
    response = client.post(purge_url(source), {"affected": digest_of(sorted(pair))}, headers=HX)
    assert response.status_code == 200
    assert b'data-testid="confirm-error"' in response.content and b"<html" not in response.content
    assert Atom.objects.filter(id__in=pair).count() == 2 and not AtomStore.get_or_create_for(acme).purge_barrier


@pytest.mark.parametrize("ticked", [{}, {"confirm": ""}, {"confirm": "false"}])
def test_an_unticked_box_is_named_before_a_stale_or_missing_digest(client, acme, alice, pair, ticked):
    source, _ = pair
    client.force_login(alice)
    response = client.post(purge_url(source), ticked, headers=HX)
    assert b"Tick the box to confirm the erasure." in response.content
    assert b'data-testid="purge-changed"' not in response.content
    ticked_only = client.post(purge_url(source), {"confirm": "on"}, headers=HX)  # the preview's digest lost
    assert b'data-testid="purge-changed"' in ticked_only.content
    assert Atom.objects.filter(id__in=pair).count() == 2 and not AtomStore.get_or_create_for(acme).purge_barrier


def test_a_preview_that_went_out_of_date_is_shown_again_instead_of_purging(client, acme, alice, pair):
    source, _ = pair
    client.force_login(alice)
    response = confirm(client, [source], source)  # the admin saw only the source
    assert response.status_code == 200
    assert b'data-testid="purge-changed"' in response.content
    assert Atom.objects.filter(id__in=pair).count() == 2 and not AtomStore.get_or_create_for(acme).purge_barrier


def test_a_confirmed_purge_runs_to_the_end_and_shows_the_receipt(
        client, acme, alice, pair, django_capture_on_commit_callbacks, eager):
    source, quote = pair
    unrelated, _ = write(acme, "Unrelated note.")
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True) as queued:
        response = confirm(client, [source, quote], source)
    assert len(queued) == 1  # the task goes out on commit
    assert response.status_code == 302 and response["Location"] == purge_url(source, "/progress")
    assert not Atom.objects.filter(id__in=pair).exists() and Atom.objects.filter(id=unrelated).exists()
    assert PurgedAtom.objects.filter(tenant=acme).count() == 2
    receipt = ErasureReceipt.objects.get(tenant=acme).receipt
    assert receipt["requestedBy"] == "user:alice" and receipt["atomIds"] == sorted(pair)
    assert AuditEvent.objects.filter(tenant=acme, action="atoms.purge", actor_label="user:alice").count() == 1

    page = client.get(response["Location"]).content.decode()
    assert 'data-state="complete"' in page and receipt["id"] in page and receipt["digest"] in page
    assert "hx-trigger" not in page.split('data-testid="purge-progress"')[1].split(">")[0]  # polling stopped
    assert "<td>revisions</td><td>" in page
    # The purge page of an erased atom shows the same receipt instead of a preview.
    again = client.get(purge_url(source)).content.decode()
    assert receipt["id"] in again and 'data-testid="purge-confirm"' not in again


def test_an_htmx_confirm_swaps_in_the_progress_panel_and_its_address(
        client, acme, alice, pair, django_capture_on_commit_callbacks, eager):
    source, quote = pair
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = confirm(client, [source, quote], source, hx=True)
    assert response.status_code == 200
    assert response["HX-Push-Url"] == purge_url(source, "/progress")
    assert b"<html" not in response.content and b'id="purge-panel"' in response.content


def test_the_barrier_goes_up_before_the_task_runs(client, acme, alice, pair, django_capture_on_commit_callbacks):
    source, quote = pair
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        confirm(client, [source, quote], source)
    # The task has not run yet, but the tenant's Atom API is already closed.
    assert AtomStore.get_or_create_for(acme).purge_barrier["atomId"] == source
    assert Atom.objects.filter(id__in=pair).count() == 2
    assert len(queued) == 1


def test_the_progress_view_polls_while_the_purge_is_pending(client, acme, alice, pair):
    source, _ = pair
    raise_barrier(acme, source)
    client.force_login(alice)
    page = client.get(purge_url(source, "/progress")).content.decode()
    assert 'data-state="running"' in page and 'hx-trigger="every 2s"' in page
    assert 'aria-current="step"' in page and "Finding dependants" in page
    partial = client.get(purge_url(source, "/progress"), headers=HX)
    assert partial.status_code == 200 and b"<html" not in partial.content
    assert b'data-state="running"' in partial.content
    # The purge page itself now shows the progress, not a second preview.
    assert b'data-state="running"' in client.get(purge_url(source)).content


def erase_until(tenant, source: str, atom_id: str) -> None:  # type: ignore[no-untyped-def]
    """Run the purge of `source` one work unit at a time until `atom_id` is erased; the
    barrier is still up then (the receipt is a step of its own, after every erasure)."""
    for _ in range(100):
        if PurgedAtom.objects.filter(tenant=tenant, atom_id=atom_id).exists():
            break
        purge_in_slices(tenant_id=tenant.pk, atom_id=source, username="alice", seconds=0)
    assert PurgedAtom.objects.filter(tenant=tenant, atom_id=atom_id).exists()
    assert AtomStore.get_or_create_for(tenant).purge_barrier["atomId"] == source
    assert not ErasureReceipt.objects.filter(tenant=tenant).exists()


@pytest.mark.parametrize("erased", ["source", "quote"])
def test_an_erased_atom_shows_the_running_purge_until_its_receipt_is_kept(
        client, acme, alice, pair, settings, erased):
    settings.ATOMS_PURGE_SLICE_WORK = 1
    source, quote = pair
    atom_id = source if erased == "source" else quote
    raise_barrier(acme, source)
    erase_until(acme, source, atom_id)
    client.force_login(alice)
    page = client.get(purge_url(atom_id, "/progress")).content.decode()
    assert 'data-state="running"' in page and 'data-state="complete"' not in page
    # The panel is the purge's: it polls and resumes the atom the purge was started for.
    assert f'hx-get="{purge_url(source, "/progress")}"' in page
    purge_in_slices(tenant_id=acme.pk, atom_id=source, username="alice")
    done = client.get(purge_url(atom_id, "/progress")).content.decode()
    receipt = ErasureReceipt.objects.get(tenant=acme).receipt
    assert 'data-state="complete"' in done and receipt["id"] in done


def test_resume_queues_the_rest_of_a_pending_purge(client, acme, alice, pair, django_capture_on_commit_callbacks,
                                                   eager):
    source, _ = pair
    raise_barrier(acme, source)
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(purge_url(source, "/resume"), headers=HX)
    assert response.status_code == 200
    assert b"<html" not in response.content and b'id="purge-panel"' in response.content
    assert not Atom.objects.filter(id__in=pair).exists()
    assert b'data-state="complete"' in client.get(purge_url(source, "/progress"), headers=HX).content


def test_resume_without_htmx_redirects_to_the_progress_page(client, acme, alice, pair):
    source, _ = pair
    client.force_login(alice)
    response = client.post(purge_url(source, "/resume"))
    assert response.status_code == 302 and response["Location"] == purge_url(source, "/progress")
    assert Atom.objects.filter(id=source).exists()  # nothing was pending: nothing ran


def test_another_pending_purge_blocks_a_new_one(client, acme, alice, pair):
    source, _ = pair
    other, _ = write(acme, "Another note.")
    raise_barrier(acme, source)
    client.force_login(alice)
    page = client.get(purge_url(other)).content.decode()
    assert 'data-testid="purge-blocked"' in page and source in page
    assert confirm(client, [other], other).status_code == 200
    assert Atom.objects.filter(id=other).exists()


def test_progress_of_an_atom_without_a_purge_says_so(client, acme, alice, pair):
    source, _ = pair
    client.force_login(alice)
    page = client.get(purge_url(source, "/progress")).content.decode()
    assert 'data-state="none"' in page and 'data-testid="purge-none"' in page


def test_the_purge_page_has_a_breadcrumb_back_to_the_atom(client, acme, alice, pair):
    source, _ = pair
    client.force_login(alice)
    html = client.get(purge_url(source)).content.decode()
    crumbs = html[html.index('data-testid="breadcrumb"'):html.index("</nav>", html.index('data-testid="breadcrumb"'))]
    assert 'href="/t/acme/atoms/"' in crumbs and f'href="/t/acme/atoms/{source}/"' in crumbs and "\u203a Purge" in crumbs
