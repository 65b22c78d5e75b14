"""The purge task (atoms.purge_run): maxWork slices until done, re-queued by time slice,
idempotent, and retried on storage errors with the barrier left up."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError

from atoms.api.purge import answer_purge
from atoms.models import Atom, AtomStore, ErasureReceipt
from atoms.principal import Principal
from atoms.services import purge as purge_service
from atoms.services.purge_slices import PurgeStorageError, purge_in_slices, run_state
from atoms.tasks import purge_run
from memoryhub.digests import digest_of
from tenants.models import Membership, Role, Tenant
from tests.atoms.ui.tools_helpers import cited_pair, write
from tests.worker import celery_worker


def start(tenant, atom_id: str) -> None:  # type: ignore[no-untyped-def]
    answer_purge(Principal.for_person(tenant, "alice"), {"atomId": atom_id, "options": {"maxWork": 0}})


@pytest.fixture
def pair(acme, alice):  # type: ignore[no-untyped-def]
    return cited_pair(acme)


def test_small_slices_still_finish_the_purge(acme, pair, settings):
    settings.ATOMS_PURGE_SLICE_WORK = 1
    source, _ = pair
    start(acme, source)
    run = purge_in_slices(tenant_id=acme.pk, atom_id=source, username="alice")
    assert run.state == "complete" and run.calls > 3
    assert not Atom.objects.filter(id__in=pair).exists()
    assert ErasureReceipt.objects.get(tenant=acme).id == run.erasure_id
    assert run_state(acme.pk, source)["state"] == "complete"


def test_a_used_up_time_slice_leaves_the_rest_for_the_next_run(acme, pair, settings):
    settings.ATOMS_PURGE_SLICE_WORK = 1
    source, _ = pair
    start(acme, source)
    run = purge_in_slices(tenant_id=acme.pk, atom_id=source, username="alice", seconds=0)
    assert run.state == "continue" and run.calls >= 1
    assert AtomStore.get_or_create_for(acme).purge_barrier["atomId"] == source


def test_the_task_queues_itself_until_done(acme, pair, settings, eager):
    settings.ATOMS_PURGE_SLICE_WORK = 1
    settings.ATOMS_PURGE_SLICE_SECONDS = 0
    source, _ = pair
    start(acme, source)
    result = purge_run.apply(args=[acme.pk, source, "alice"]).get()
    assert result["state"] == "continue"  # this run's part; its successors did the rest
    assert not Atom.objects.filter(id__in=pair).exists()
    assert AtomStore.get_or_create_for(acme).purge_barrier is None


def test_the_task_never_starts_a_purge_and_repeats_harmlessly(acme, pair, eager):
    source, _ = pair
    assert purge_run.apply(args=[acme.pk, source, "alice"]).get()["state"] == "idle"
    assert Atom.objects.filter(id__in=pair).count() == 2 and not AtomStore.get_or_create_for(acme).purge_barrier
    start(acme, source)
    assert purge_run.apply(args=[acme.pk, source, "alice"]).get()["state"] == "complete"
    again = purge_run.apply(args=[acme.pk, source, "alice"]).get()
    assert again["state"] == "idle" and again["erasureId"] == ErasureReceipt.objects.get(tenant=acme).id
    assert ErasureReceipt.objects.filter(tenant=acme).count() == 1


def test_a_storage_error_keeps_the_barrier_and_a_later_run_resumes(acme, pair, monkeypatch):
    source, _ = pair
    start(acme, source)

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise DatabaseError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(purge_service, "erase_next", broken)
        with pytest.raises(PurgeStorageError):
            purge_in_slices(tenant_id=acme.pk, atom_id=source, username="alice")
    assert run_state(acme.pk, source)["state"] == "retrying"
    assert AtomStore.get_or_create_for(acme).purge_barrier["atomId"] == source
    assert Atom.objects.filter(id__in=pair).count() == 2
    assert purge_in_slices(tenant_id=acme.pk, atom_id=source, username="alice").state == "complete"
    assert not Atom.objects.filter(id__in=pair).exists()


def test_the_task_marks_the_run_failed_when_retries_are_used_up(acme, pair, monkeypatch, eager):
    source, _ = pair
    start(acme, source)
    monkeypatch.setattr(purge_service, "erase_next",
                        lambda *a, **k: (_ for _ in ()).throw(DatabaseError("disk full")))
    monkeypatch.setattr(purge_run, "max_retries", 0)
    with pytest.raises(PurgeStorageError):
        purge_run.apply(args=[acme.pk, source, "alice"], throw=True)
    assert run_state(acme.pk, source)["state"] == "failed"
    assert AtomStore.get_or_create_for(acme).purge_barrier["atomId"] == source


def test_another_pending_purge_is_left_alone(acme, pair, eager):
    source, _ = pair
    other, _ = write(acme, "Another note.")
    start(acme, source)
    assert purge_run.apply(args=[acme.pk, other, "alice"]).get()["state"] == "idle"
    assert AtomStore.get_or_create_for(acme).purge_barrier["atomId"] == source
    assert Atom.objects.filter(id=other).exists()


@pytest.mark.worker
def test_a_real_worker_runs_a_confirmed_purge_in_slices(transactional_db, client):
    tenant = Tenant.objects.create(slug="acme", name="Acme Corp")
    admin = User.objects.create(username="alice")
    Membership.objects.create(tenant=tenant, user=admin, role=Role.ADMIN)
    source, quote = cited_pair(tenant)
    client.force_login(admin)
    progress = f"/t/acme/atoms/{source}/purge/progress"
    # One unit per call and no time per run: the task re-queues itself after every step.
    with celery_worker(env={"ATOMS_PURGE_SLICE_WORK": "1", "ATOMS_PURGE_SLICE_SECONDS": "0"}):
        response = client.post(f"/t/acme/atoms/{source}/purge",
                               {"confirm": "on", "affected": digest_of(sorted([source, quote]))})
        assert response.status_code == 302 and response["Location"] == progress
        deadline = time.monotonic() + 60
        while b'data-state="complete"' not in client.get(progress).content and time.monotonic() < deadline:
            time.sleep(0.3)
    page = client.get(progress).content.decode()
    assert 'data-state="complete"' in page
    receipt = ErasureReceipt.objects.get(tenant=tenant).receipt
    assert receipt["id"] in page and receipt["atomIds"] == sorted([source, quote])
    assert not Atom.objects.filter(id__in=[source, quote]).exists()
    assert AtomStore.get_or_create_for(tenant).purge_barrier is None
