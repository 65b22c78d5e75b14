"""The tenant's availability model at work (docs/atoms.md "Defaults" steps 1-2, docs/atoms.md "Decisions").

`model_for` builds the configured model; `use_values` turns the reader's stored use state
into u ≥ 0 per revision for read and search; `evaluated_at` fixes the one instant an
evaluation uses. Stored state is keyed by (subject, policy, revisionId): a revision lives in
exactly one policy, so within a set of policies the revision id alone names the row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Max
from django.utils.module_loading import import_string

from atoms.config import DEFAULT_MODEL
from atoms.core.availability import AvailabilityModel, call_value, construct_model
from atoms.core.errors import ModelError
from atoms.errors import AtomError, from_core, invalid
from atoms.models import AtomStore, UseState
from memoryhub.prepared import one_of, prepared_cursor
from tenants.models import Tenant

CHUNK = 500


def _model_config(config: Any) -> tuple[str, Any, bool]:
    """(dotted class path, options, explicitly configured) from a stored atoms_config."""
    activation = config.get("activation") if isinstance(config, dict) else None
    raw = activation.get("model") if isinstance(activation, dict) else None
    if raw is None:
        return DEFAULT_MODEL, {}, False
    if not isinstance(raw, dict) or not isinstance(raw.get("class"), str):
        raise invalid("The tenant's activation.model is not {class, options}.", path="activation.model")
    return raw["class"], raw.get("options", {}), True


def model_for(tenant: Tenant, *, store: AtomStore | None = None) -> AvailabilityModel:
    """The tenant's availability model, built from `atoms_config.activation.model`, by
    default AdaptiveUse with its default options.

    The config was checked when it was saved, but the allowlist and the class's code may
    have changed since, so a class no longer listed, or one that no longer builds, is
    INVALID_INPUT here too rather than a silent fallback to the default.
    """
    store = store or AtomStore.get_or_create_for(tenant)
    path, options, configured = _model_config(store.config)
    allowed = getattr(settings, "ATOMS_AVAILABILITY_MODELS", [DEFAULT_MODEL])
    if configured and path not in allowed:
        raise invalid("The configured availability model is not listed in ATOMS_AVAILABILITY_MODELS.",
                      path="activation.model.class")
    try:
        cls = import_string(path)
    except ImportError as exc:
        raise invalid("The configured availability model cannot be imported.",
                      path="activation.model.class") from exc
    try:
        return construct_model(cls, options)
    except ModelError as exc:
        raise from_core(exc, path="activation.model") from exc


def state_invalidated() -> AtomError:
    return AtomError("STATE_INVALIDATED", "Stored use state was written by another availability model; "
                     "call uses/reset for this subject.")


def _states(tenant: Tenant, subject: str, policies: Iterable[str]) -> Any:
    return UseState.objects.filter(tenant=tenant, subject=subject, policy__in=list(policies))


def check_model_id(tenant: Tenant, subject: str, policies: Iterable[str], model: AvailabilityModel) -> None:
    """STATE_INVALIDATED while the subject holds state of another model id in these policies."""
    if _states(tenant, subject, policies).exclude(model_id=model.id).exists():
        raise state_invalidated()


def evaluated_at(tenant: Tenant, subject: str, policies: Iterable[str], now: int) -> int:
    """docs/atoms.md "Defaults" step 1: max(now, the largest stored updatedAt of the subject in these policies),
    so a clock that moved backwards never evaluates state before it was written."""
    latest = _states(tenant, subject, policies).aggregate(latest=Max("updated_at"))["latest"]
    return now if latest is None else max(now, int(latest))


def use_values(tenant: Tenant, subject: str, policies: Iterable[str], revision_ids: Iterable[str], now: int,
               *, model: AvailabilityModel | None = None) -> dict[str, float]:
    """{revisionId: u} for read and search (docs/atoms.md "Defaults" step 2); a revision without state gets
    `value(None, now)`. Pass `now = evaluated_at(...)`.

    Any stored row of another model id gives STATE_INVALIDATED, and a failing `value` is
    INVALID_INPUT that aborts the whole evaluation: never a fallback to 0 (docs/atoms.md "Decisions").
    """
    policies = list(policies)
    model = model or model_for(tenant)
    check_model_id(tenant, subject, policies, model)
    wanted = list(dict.fromkeys(revision_ids))
    stored: dict[str, Any] = {}
    for start in range(0, len(wanted), CHUNK):  # read may evaluate up to 10,000 candidates
        stored.update(_states(tenant, subject, policies).filter(revision_id__in=wanted[start:start + CHUNK])
                      .values_list("revision_id", "state"))
    values: dict[str, float] = {}
    try:
        for revision_id in wanted:
            values[revision_id] = call_value(model, stored.get(revision_id), now)
    except ModelError as exc:
        raise from_core(exc) from exc
    return values


def use_snapshot(tenant: Tenant, subject: str, policies: Iterable[str], revision_ids: Iterable[str], now: int,
                 *, model: AvailabilityModel) -> tuple[int, dict[str, float]]:
    """`evaluated_at` and `use_values` together, as read and search need them, in one query
    whatever the number of revisions: the largest updatedAt and the count of rows of another
    model id, with the rows asked for (none when the subject holds no state in these
    policies). Plain SQL: each statement is a round trip, and compiling the aggregate cost
    more CPU than running it (docs/atoms.md "Read path costs")."""
    policies = list(policies)
    wanted = list(dict.fromkeys(revision_ids))
    latest, foreign, stored = _use_rows(tenant, subject, policies, model.id, wanted) if policies else (None, 0, {})
    if foreign:
        raise state_invalidated()
    at = now if latest is None else max(now, int(latest))
    try:
        return at, {revision_id: call_value(model, stored.get(revision_id), at) for revision_id in wanted}
    except ModelError as exc:
        raise from_core(exc) from exc


def _use_rows(tenant: Tenant, subject: str, policies: list[str], model_id: str, wanted: list[str]
              ) -> tuple[int | None, int, dict[str, Any]]:
    """(largest updated_at or None, rows of another model id, {revision id: state} of `wanted`)
    in one statement. One list of ids (an array parameter on PostgreSQL, `one_of`): the graph
    holds at most maxNodes (≤ 10,000) revisions, within SQLite's host-parameter limit
    (32,766 since 3.32). The
    aggregate branch comes first and types the columns the rows branch leaves NULL."""
    table = connection.ops.quote_name(UseState._meta.db_table)
    policy_is, policy_params = one_of(policies)
    where = f"tenant_id = %s AND subject = %s AND {policy_is('policy')}"
    scope = [tenant.pk, subject, *policy_params]
    sql = (f"SELECT NULL, NULL, MAX(updated_at), COUNT(CASE WHEN model_id <> %s THEN 1 END) "  # noqa: S608
           f"FROM {table} WHERE {where}")
    params: list[Any] = [model_id, *scope]
    if wanted:
        wanted_is, wanted_params = one_of(wanted)
        sql += (f" UNION ALL SELECT revision_id, state, NULL, NULL FROM {table} "  # noqa: S608
                f"WHERE {where} AND {wanted_is('revision_id')}")
        params += [*scope, *wanted_params]
    field = UseState._meta.get_field("state")
    column = field.get_col(UseState._meta.db_table)
    converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
    latest: int | None = None
    foreign = 0
    stored: dict[str, Any] = {}
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        for revision_id, state, most, count in cursor.fetchall():
            if revision_id is None:
                latest, foreign = most, count or 0
                continue
            for converter in converters:
                state = converter(state, column, connection)
            stored[revision_id] = state
    return latest, foreign, stored
