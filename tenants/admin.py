from __future__ import annotations

from typing import Any

from django import forms
from django.apps import apps
from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import unquote
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.api.keys import KeySpecSerializer
from tenants.memory.rules import size_of
from tenants.models import Agent, ApiKey, KvEntry, Membership, Role, Tenant
from tenants.services.keys import TenantLimitReached, apikey_issue, apikey_limits_check, apikey_revoke
from tenants.services.members import last_admin_refusal
from tenants.services.suspension import tenant_suspend, tenant_unsuspend


def staff_of(request: HttpRequest) -> User:
    """The signed-in staff member acting: the admin site lets no one else in
    (AdminSite.has_permission), so the anonymous user never gets here."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied
    return user


class MembershipFormSet(BaseInlineFormSet):
    """The tenant page's members: removing or demoting the last admin is refused, as on the
    Members page (tenants/services/members.py). The admin's change view is one transaction,
    so the tenant row stays locked from this check until the rows are saved."""

    def clean(self) -> None:
        super().clean()
        if self.instance.pk is None or any(self.errors):
            return
        leaving: list[int] = []
        joining = 0
        for form in self.forms:
            data = getattr(form, "cleaned_data", None)
            if not data:
                continue
            pk = form.instance.pk
            if form in self.deleted_forms or data.get("role") != Role.ADMIN:
                if pk is not None:
                    leaving.append(pk)
            elif pk is None or form.initial.get("role") != Role.ADMIN:
                joining += 1
        refusal = last_admin_refusal(tenant_id=self.instance.pk, leaving=leaving, joining=joining)
        if refusal is not None:
            raise forms.ValidationError(refusal)


class MembershipInline(admin.TabularInline):
    model = Membership
    formset = MembershipFormSet
    extra = 0
    autocomplete_fields = ["user"]


class AuditedAdmin(admin.ModelAdmin):
    """Admin edits are audited like every other write (the admin is a UI too)."""

    audit_type = ""
    # Form fields whose values stay out of the audit row (a service audits the change itself).
    unaudited_fields: tuple[str, ...] = ()

    def audit_tenant(self, obj: Any) -> Tenant:
        return obj.tenant

    def audit_object_id(self, obj: Any) -> str:
        return str(obj)

    def audit_action(self, change: bool) -> str:
        return f"{self.audit_type}.{'update' if change else 'create'}"

    def _audit_delete(self, request: HttpRequest, obj: Any) -> None:
        if self.audit_type != "tenant":  # a tenant's audit rows go with it
            audit_record(tenant=self.audit_tenant(obj), actor=Actor.for_user(staff_of(request)),
                         action=f"{self.audit_type}.delete", object_type=self.audit_type,
                         object_id=self.audit_object_id(obj))

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool) -> None:
        fields = [name for name in form.changed_data if name not in self.unaudited_fields]
        super().save_model(request, obj, form, change)
        if change and not fields and form.changed_data:
            return  # only unaudited fields changed
        before = {name: str(form.initial.get(name)) for name in fields} if change else None
        audit_record(
            tenant=self.audit_tenant(obj), actor=Actor.for_user(staff_of(request)),
            action=self.audit_action(change), object_type=self.audit_type,
            object_id=self.audit_object_id(obj), before=before,
            after={name: str(form.cleaned_data.get(name)) for name in fields},
        )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self._audit_delete(request, obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        # "Delete selected" deletes in one statement: each row is audited first, in the
        # same transaction as the delete.
        with transaction.atomic():
            for obj in queryset:
                self._audit_delete(request, obj)
            super().delete_queryset(request, queryset)


def _count_per_tenant(queryset: QuerySet[Any], tenant_path: str = "tenant") -> Coalesce:
    """How many rows of `queryset` belong to the outer tenant: one correlated subquery per
    column, so the list costs the same few queries for any number of tenants (joins of
    several counts would multiply each other's rows)."""
    counts = (queryset.filter(**{tenant_path: OuterRef("pk")}).order_by().values(tenant_path)
              .annotate(n=Count("pk")).values("n"))
    return Coalesce(Subquery(counts, output_field=IntegerField()), 0)


class TenantForm(forms.ModelForm):
    """The tenant page; `suspended` goes through tenant_suspend / tenant_unsuspend."""

    # The page carries the box's value as it was shown (a hidden initial), so "changed"
    # means this person ticked or cleared it, not that someone else acted since.
    suspended = forms.BooleanField(
        required=False, show_hidden_initial=True,
        help_text="Refuse every API key of the tenant and make its web UI read-only; nothing is deleted "
                  "(docs/operations.md \"Suspending a tenant\").")

    class Meta:
        model = Tenant
        fields = ["slug", "name", "api_rate_per_minute", "max_api_keys", "max_read_policies", "suspended",
                  "suspended_reason"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["suspended"].initial = self.instance.suspended_at is not None


@admin.register(Tenant)
class TenantAdmin(AuditedAdmin):
    audit_type = "tenant"
    form = TenantForm
    unaudited_fields = ("suspended", "suspended_reason")
    list_display = ["slug", "name", "members", "active_keys", "kv_entries", "memory_chars", "atom_count",
                    "api_rate_per_minute", "max_api_keys", "max_read_policies", "created_at", "suspended_since",
                    "dashboard"]
    list_filter = [("suspended_at", admin.EmptyFieldListFilter)]
    search_fields = ["slug", "name"]
    readonly_fields = ["suspended_at", "members", "active_keys", "kv_entries", "memory_chars", "atom_count",
                       "dashboard"]
    fieldsets = [
        (None, {"fields": ["slug", "name", "api_rate_per_minute", "max_api_keys", "max_read_policies"]}),
        ("Suspension", {"fields": ["suspended", "suspended_at", "suspended_reason"]}),
        ("Usage", {"fields": ["members", "active_keys", "kv_entries", "memory_chars", "atom_count", "dashboard"]}),
    ]
    inlines = [MembershipInline]
    actions = ["suspend", "unsuspend"]

    def audit_tenant(self, obj: Any) -> Tenant:
        return obj

    def save_model(self, request: HttpRequest, obj: Tenant, form: forms.ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and "suspended" not in form.changed_data:
            # Only a ticked or cleared box acts: a page opened before someone else
            # suspended (or lifted) the tenant must not undo that when it saves a limit.
            return
        actor = Actor.for_user(staff_of(request))
        if form.cleaned_data.get("suspended"):
            tenant_suspend(tenant=obj, actor=actor)
        else:
            tenant_unsuspend(tenant=obj, actor=actor)

    @admin.action(description="Suspend selected tenants (refuse their API keys, read-only web UI)")
    def suspend(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        actor = Actor.for_user(staff_of(request))
        count = sum(tenant_suspend(tenant=tenant, actor=actor) for tenant in queryset)
        self.message_user(request, f"Suspended {count} tenant(s); add the reason on each tenant's page.")

    @admin.action(description="Unsuspend selected tenants")
    def unsuspend(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        actor = Actor.for_user(staff_of(request))
        count = sum(tenant_unsuspend(tenant=tenant, actor=actor) for tenant in queryset)
        self.message_user(request, f"Lifted the suspension of {count} tenant(s).")

    @admin.display(description="Suspended since", ordering="suspended_at")
    def suspended_since(self, obj: Tenant) -> str:
        return obj.suspended_at.strftime("%Y-%m-%d %H:%M UTC") if obj.suspended_at else "-"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        # Memory sizes are counted in Python from the stored entries (the file form's length),
        # so the volume row comes along; its secrets and drift records are not loaded.
        return (super().get_queryset(request)
                .select_related("memory_volume")
                .defer("memory_volume__secrets", "memory_volume__memory_drift", "memory_volume__user_drift")
                .annotate(
                    member_count=_count_per_tenant(Membership.objects.all()),
                    active_key_count=_count_per_tenant(ApiKey.objects.filter(revoked_at__isnull=True)),
                    kv_entry_count=_count_per_tenant(KvEntry.objects.all(), "agent__tenant"),
                    # By app label: tenants must not import atoms, which builds on it.
                    atom_total=_count_per_tenant(apps.get_model("atoms", "Atom").objects.all()),
                ))

    @admin.display(description="Members", ordering="member_count")
    def members(self, obj: Tenant) -> int | str:
        return getattr(obj, "member_count", "-")

    @admin.display(description="Active keys", ordering="active_key_count")
    def active_keys(self, obj: Tenant) -> int | str:
        return getattr(obj, "active_key_count", "-")

    @admin.display(description="KV entries", ordering="kv_entry_count")
    def kv_entries(self, obj: Tenant) -> int | str:
        return getattr(obj, "kv_entry_count", "-")

    @admin.display(description="Memory chars (MEMORY.md + USER.md)")
    def memory_chars(self, obj: Tenant) -> str:
        volume = getattr(obj, "memory_volume", None) if obj.pk else None
        if volume is None:
            return "0 + 0"
        return f"{size_of(volume.memory_entries):,} + {size_of(volume.user_entries):,}"

    @admin.display(description="Atoms", ordering="atom_total")
    def atom_count(self, obj: Tenant) -> int | str:
        return getattr(obj, "atom_total", "-")

    @admin.display(description="Dashboard")
    def dashboard(self, obj: Tenant) -> SafeString | str:
        if not obj.pk:
            return "-"
        return format_html('<a href="{}">{}</a>', reverse("dashboard", args=[obj.slug]), "Open dashboard")

    def save_formset(self, request: HttpRequest, form: forms.ModelForm, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        for membership in formset.new_objects + [obj for obj, _ in formset.changed_objects]:
            audit_record(tenant=form.instance, actor=Actor.for_user(staff_of(request)), action="membership.set",
                         object_type="membership", object_id=membership.user.get_username(),
                         after={"role": membership.role})
        for membership in formset.deleted_objects:
            audit_record(tenant=form.instance, actor=Actor.for_user(staff_of(request)), action="membership.delete",
                         object_type="membership", object_id=membership.user.get_username())


class MembershipForm(forms.ModelForm):
    """Demoting the last admin is refused (tenants/services/members.py); the change view is one
    transaction, so the tenant stays locked until the row is saved."""

    class Meta:
        model = Membership
        fields = ["tenant", "user", "role"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        old = self.instance
        if old.pk is not None and self.initial.get("role") == Role.ADMIN and data.get("role") != Role.ADMIN:
            refusal = last_admin_refusal(tenant_id=old.tenant_id, leaving=[old.pk])
            if refusal is not None:
                self.add_error("role", refusal)
        return data


def delete_memberships(modeladmin: MembershipAdmin, request: HttpRequest, queryset: QuerySet[Membership]) -> Any:
    """Django's "delete selected", unless it would leave a tenant without an admin."""
    with transaction.atomic():
        by_tenant: dict[int, list[int]] = {}
        for pk, tenant_id in queryset.values_list("pk", "tenant_id"):
            by_tenant.setdefault(tenant_id, []).append(pk)
        for tenant_id in sorted(by_tenant):  # one lock order for every request
            refusal = last_admin_refusal(tenant_id=tenant_id, leaving=by_tenant[tenant_id])
            if refusal is not None:
                slug = Tenant.objects.only("slug").get(pk=tenant_id).slug
                modeladmin.message_user(request, f"Nothing deleted. {slug}: {refusal}", messages.ERROR)
                return None
        return delete_selected(modeladmin, request, queryset)


@admin.register(Membership)
class MembershipAdmin(AuditedAdmin):
    audit_type = "membership"
    form = MembershipForm

    # The same rows the Members page and the tenant page's member rows write: by username.
    def audit_object_id(self, obj: Membership) -> str:
        return obj.user.get_username()

    def audit_action(self, change: bool) -> str:
        return "membership.set"

    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["user__username", "tenant__slug"]

    def get_readonly_fields(self, request: HttpRequest, obj: Membership | None = None) -> list[str]:
        # Moving a membership to another person or tenant would remove it from its tenant
        # past the last-admin check; add a new membership instead.
        return ["tenant", "user"] if obj is not None else []

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        django_delete = actions.get("delete_selected")
        if django_delete is not None:
            actions["delete_selected"] = (delete_memberships, "delete_selected", django_delete[2])
        return actions

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        with transaction.atomic():
            membership = self.get_object(request, unquote(object_id))
            if membership is not None and membership.role == Role.ADMIN:
                refusal = last_admin_refusal(tenant_id=membership.tenant_id, leaving=[membership.pk])
                if refusal is not None:
                    self.message_user(request, refusal, messages.ERROR)
                    return HttpResponseRedirect(reverse("admin:tenants_membership_change", args=[membership.pk]))
            return super().delete_view(request, object_id, extra_context)


@admin.register(Agent)
class AgentAdmin(AuditedAdmin):
    audit_type = "agent"
    list_display = ["slug", "tenant", "name", "created_at"]
    list_filter = ["tenant"]
    search_fields = ["slug", "name", "tenant__slug"]

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None) -> list[str]:
        # A slug names a store other code relies on; renaming would orphan callers.
        return ["tenant", "slug"] if obj is not None else []


class ApiKeyAddForm(forms.ModelForm):
    """Validates with the same rules as the API (KeySpecSerializer)."""

    class Meta:
        model = ApiKey
        fields = ["tenant", "name", "kind", "subject", "read_only", "agents", "read_policies", "write_policies"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        spec = {k: data.get(k) for k in ["kind", "name", "subject", "read_only", "agents"]}
        for name in ["read_policies", "write_policies"]:
            if data.get(name):
                spec[name] = data[name]
        serializer = KeySpecSerializer(data={k: v for k, v in spec.items() if v is not None or k == "agents"})
        if not serializer.is_valid():
            for field, errors in serializer.errors.items():
                self.add_error(field if field in self.fields else None, " ".join(map(str, errors)))
        elif data.get("tenant") is not None:
            # An early, friendly answer; apikey_issue checks again under the tenant lock.
            try:
                apikey_limits_check(tenant=data["tenant"], read_policies=data.get("read_policies") or ["default"])
            except TenantLimitReached as exc:
                self.add_error(None, exc.message)
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["public_id", "tenant", "kind", "name", "read_only", "last_used_at", "revoked_at"]
    list_filter = ["kind", "read_only", "tenant"]
    search_fields = ["prefix", "name", "tenant__slug"]
    readonly_fields = ["public_id", "generation", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def get_form(self, request: HttpRequest, obj: ApiKey | None = None, change: bool = False,
                 **kwargs: Any) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        # Changing an issued key's rights would silently widen it; issue a new key instead.
        if obj is not None:
            return [f.name for f in ApiKey._meta.fields if f.name != "name"] + ["public_id"]
        return self.readonly_fields

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        obj.created_by = staff_of(request)
        raw = apikey_issue(key=obj, actor=Actor.for_user(staff_of(request)))
        messages.warning(request, f"New API key {obj.public_id} — copy it now, it is shown only once: {raw}")

    def has_delete_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        return False  # keys are revoked, never deleted, so audit rows keep their actor

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            apikey_revoke(key=key, actor=Actor.for_user(staff_of(request)))
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


# The user pages know about memberships (the last-admin rule); registered here so that
# Django's admin autodiscovery loads them.
from tenants import admin_users  # noqa: E402, F401
