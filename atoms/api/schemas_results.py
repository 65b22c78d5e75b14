"""Response schemas the Atom endpoints share: AtomView, receipt, usage (docs/atoms.md "Recall").

Only the OpenAPI description of what `atoms/api/<name>.py` renders from a result dataclass;
every field is described, so a client generator gets named types instead of free maps.
"""

from __future__ import annotations

from rest_framework import serializers

from atoms.api.schemas_common import REF_PATTERN
from atoms.models.storage import OriginKind, RevisionState


class AtomsLinkView(serializers.Serializer):
    role = serializers.CharField(help_text="The link's role (`follows`, `requires`, ...).")
    at = serializers.ChoiceField(choices=["logical", "observed"],
                                 help_text="logical: the target's head; observed: the revision linked to.")
    required = serializers.BooleanField(help_text="A required link's target is always shown with its atom.")  # type: ignore[assignment]  # a declared field: DRF's metaclass takes it off the class
    orderKey = serializers.CharField(help_text="The link's position among the atom's links.")
    ref = serializers.RegexField(REF_PATTERN, required=False, help_text="The target, when the caller may read it.")
    unavailable = serializers.BooleanField(required=False,
                                           help_text="Present (true) when the target is purged or unreadable.")


class AtomsSourceView(serializers.Serializer):
    ref = serializers.RegexField(REF_PATTERN, help_text="The cited source atom.")
    start = serializers.IntegerField(help_text="Byte offset of the quote in the source's text.")
    end = serializers.IntegerField(help_text="Byte offset just past the quote.")


class AtomsProvenance(serializers.Serializer):
    origin = serializers.ChoiceField(choices=OriginKind.values,
                                     help_text="`source`, or the generatedOrigin the writing agent declared.")
    producer = serializers.CharField(help_text="Who made it: `key:<id>` or `user:<name>`.")


class AtomsView(serializers.Serializer):
    ref = serializers.RegexField(REF_PATTERN, help_text="This caller's name for the revision.")
    text = serializers.CharField(help_text="The revision's text.")
    links = AtomsLinkView(many=True)
    sources = AtomsSourceView(many=True)
    provenance = AtomsProvenance()
    state = serializers.ChoiceField(choices=RevisionState.values, help_text="The revision's state.")


class AtomsScoredView(AtomsView):
    score = serializers.FloatField(help_text="The ranking score; 0 for a closure member outside the ranking.")


class AtomsReceipt(serializers.Serializer):
    id = serializers.CharField(help_text="`receipt:<uuid>`, for observe and manifest.")
    state = serializers.CharField(help_text="`seq:<n>`: the store state the answer was computed on.")
    signalDigest = serializers.CharField(help_text="SHA-256 of the canonical request signal.")


class AtomsUsage(serializers.Serializer):
    maxAtoms = serializers.IntegerField(help_text="Atoms shown.")
    maxCandidates = serializers.IntegerField(help_text="Candidates scanned (first page only).")
    maxBytes = serializers.IntegerField(help_text="Bytes of the answer's text.")
    maxContextTokens = serializers.IntegerField(help_text="Tokens (UTF-8 bytes) of the render.")
    maxEvaluationWork = serializers.IntegerField(help_text="Work units of the ranking (first page only).")
    maxPackingWork = serializers.IntegerField(help_text="Work units of the selection.")
