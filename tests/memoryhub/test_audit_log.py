from __future__ import annotations

from django.contrib import admin

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from memoryhub.digests import digest_of
from memoryhub.models import AuditEvent


def test_it_stores_digests_never_content(acme):
    event = audit_record(
        tenant=acme, actor=Actor.system("tests"), action="thing.change", object_type="thing",
        object_id="t1", before={"text": "the secret before"}, after={"text": "the secret after"},
    )
    row = AuditEvent.objects.filter(pk=event.pk).values()[0]
    assert "secret" not in " ".join(str(v) for v in row.values())
    assert event.before_digest == digest_of({"text": "the secret before"})
    assert event.after_digest != event.before_digest


def test_it_names_key_and_user_actors(acme, alice, make_key):
    key, _ = make_key(acme)
    by_key = audit_record(tenant=acme, actor=Actor.for_key(key), action="a", object_type="o", object_id="1")
    by_user = audit_record(tenant=acme, actor=Actor.for_user(alice), action="a", object_type="o", object_id="1")
    assert (by_key.actor_label, by_key.actor_key_id) == (f"key:{key.public_id}", key.pk)
    assert (by_user.actor_label, by_user.actor_user_id) == ("user:alice", alice.pk)
    assert by_key.before_digest == "" and by_key.after_digest == ""


def test_the_admin_is_read_only(rf, admin_user):
    model_admin = admin.site._registry[AuditEvent]
    request = rf.get("/")
    request.user = admin_user
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert model_admin.has_view_permission(request)
