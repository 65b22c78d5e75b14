"""GET / POST /api/v1/agents and DELETE /api/v1/agents/{agent}."""

from __future__ import annotations

from django.db import transaction
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.errors import PermissionDenied
from memoryhub.api.schema import errors
from memoryhub.api.strict import StrictCharField, StrictSerializer
from memoryhub.audit import audit_record
from tenants.api.kv_base import KvAPIView
from tenants.kv.rules import AGENT_SLUG_RE, KvError
from tenants.kv.store import agent_ensure
from tenants.models import Agent, KeyKind


class AgentOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()


@extend_schema_field({"type": "string", "pattern": AGENT_SLUG_RE.pattern})
class AgentSlugField(StrictCharField):
    """The slug's form is checked by the view, with the key-value code INVALID_AGENT."""


class AgentInput(StrictSerializer):
    slug = AgentSlugField()
    name = StrictCharField(required=False, allow_blank=True, max_length=200, default="")


class AgentList(serializers.Serializer):
    items = AgentOutput(many=True)


AGENT_EXAMPLE = {"slug": "release-notes", "name": "Release notes", "created_at": "2026-11-30T10:00:00Z"}


def _admin_only(view: KvAPIView) -> None:
    if view.key.kind != KeyKind.ADMIN or view.key.read_only:
        raise PermissionDenied("Only a writable admin key may manage agents.")


def _within_key(view: KvAPIView, slug: str) -> None:
    """An admin key limited to some agents manages only those: any other slug is the same
    404 as a missing agent (docs/kv.md "Decisions the specification leaves open"), so the key learns nothing about agents outside it."""
    if not view.key.allows_agent(slug):
        raise KvError("AGENT_NOT_FOUND", "No such agent.")


class AgentsView(KvAPIView):
    @extend_schema(operation_id="agents_list", summary="The tenant's agents (those this key may use)", tags=["kv"],
                   responses={200: AgentList},
                   examples=[OpenApiExample("agents", value={"items": [AGENT_EXAMPLE]}, response_only=True)])
    def get(self, request: Request) -> Response:
        agents = Agent.objects.for_tenant(self.tenant)
        if self.key.agents is not None:
            agents = agents.filter(slug__in=self.key.agents)
        return Response({"items": AgentOutput(agents, many=True).data})

    @extend_schema(operation_id="agents_create", summary="Create an agent (admin key); 200 if it exists", tags=["kv"],
                   request=AgentInput,
                   responses={201: AgentOutput, 200: AgentOutput, **errors({404: ["AGENT_NOT_FOUND"]})},
                   examples=[OpenApiExample("new", value={"slug": "release-notes", "name": "Release notes"}, request_only=True),
                             OpenApiExample("agent", value=AGENT_EXAMPLE, response_only=True)])
    def post(self, request: Request) -> Response:
        _admin_only(self)
        body = self.body_object()
        data = AgentInput(data=body)
        data.is_valid(raise_exception=True)
        slug = data.validated_data["slug"]
        if not AGENT_SLUG_RE.match(slug):
            raise KvError("INVALID_AGENT", "Agent slugs are 1-64 characters of [a-z0-9-].")
        _within_key(self, slug)
        agent, created = agent_ensure(tenant=self.tenant, slug=slug, actor=self.actor, name=data.validated_data["name"])
        return Response(AgentOutput(agent).data, status=201 if created else 200)


class AgentDetailView(KvAPIView):
    @extend_schema(operation_id="agents_delete", summary="Delete an agent with its store and runs (admin key)", tags=["kv"],
                   responses={204: None},
                   examples=[OpenApiExample("no body", value=None, response_only=True, status_codes=["204"])])
    def delete(self, request: Request, agent: str) -> HttpResponse:
        _admin_only(self)
        _within_key(self, agent)
        found = Agent.objects.filter(tenant=self.tenant, slug=agent).first()
        if found is None:
            raise KvError("AGENT_NOT_FOUND", "No such agent.")
        with transaction.atomic():
            audit_record(tenant=self.tenant, actor=self.actor, action="kv.agent.delete", object_type="agent",
                         object_id=found.slug, before={"slug": found.slug})
            found.delete()
        return HttpResponse(status=204)
