"""docs/atoms.md "Decisions": checks 4-8 for changes made with input tokens, and recording the outputs.

Both functions run inside the commit transaction, under the tenant's store row lock, after
checks 1-2 (and check 7 for tokenless changes) in `write._check_commit`.
"""

from __future__ import annotations

from collections.abc import Sequence

from atoms.errors import AtomError, denied
from atoms.models import DependencyKind, EraseDependency, InputToken, Revision, Schema
from atoms.principal import Binding
from atoms.services.receipts import CONTRACT_VERSION, pinned
from atoms.services.staleness import Staleness
from atoms.services.write_plan import ChangePlan


def check_tokens_for_commit(binding: Binding, changes: Sequence[ChangePlan], tokens: dict[str, InputToken]) -> None:
    """Checks 4-7 per change in request order, then check 8 per distinct token in order of
    first appearance (`tokens` keeps that order).

    Check 7 (cited revisions are sources) runs here, after check 6, for changes with a
    token: citing an atom the token never read is refused as ACCESS_DENIED before anything
    is said about that atom's schema."""
    policy = binding.write_policy
    for index, change in enumerate(changes):
        if change.input is None:
            continue
        manifest = tokens[change.input].manifest
        path = f"changes[{index}].input"
        if manifest.get("contractVersion") != CONTRACT_VERSION or not isinstance(manifest.get("generation"), dict):
            raise denied("The input token has no contract-2 manifest.", path=path, changeId=change.change_id)
        # Derived content never crosses policies (check 5).
        if manifest.get("readPolicies") != [policy]:
            raise denied("The input token must read exactly the policy written to.", path=path,
                         changeId=change.change_id)
        reads = {pin.get("revisionId") for pin in manifest.get("reads", []) if isinstance(pin, dict)}
        for position, origin in enumerate(change.origins):
            if origin.source.id not in reads:
                raise denied("A cited source is not among the input token's reads.",
                             path=f"changes[{index}].sources[{position}]", changeId=change.change_id)
        for origin in change.origins:
            if origin.source.schema != Schema.SOURCE:
                raise AtomError("INVALID_SOURCE_SPAN", "Only source atoms can be cited.",
                                {"changeId": change.change_id})
    expected = frozenset(c.target.id for c in changes if c.target is not None)
    checker = Staleness(binding.principal.tenant)
    for token_id, token in tokens.items():
        if not checker.token_current(token.manifest, expected=expected):
            raise AtomError("REVISION_CONFLICT", "An input the token watches changed since it was issued.",
                            {"input": token_id})


def record_token_outputs(binding: Binding, changes: Sequence[ChangePlan], tokens: dict[str, InputToken],
                         revisions: dict[str, Revision]) -> None:
    """Append to each token's `outputs` the revisions written with it, and make each of
    those output atoms an erase dependant of every atom the token read (docs/atoms.md "In the web UI: read playground and purge" rule 3)."""
    tenant = binding.principal.tenant
    for token_id in tokens:
        written = [revisions[c.change_id] for c in changes if c.input == token_id]
        # Re-read under a row lock: two commits with one token must not lose an output.
        token = InputToken.objects.select_for_update().get(tenant=tenant, id=token_id)
        outputs = list(token.outputs)
        known = {pin["revisionId"] for pin in outputs}
        outputs += [pinned(r) for r in written if r.id not in known]
        manifest = dict(token.manifest)
        manifest["generation"] = {**manifest["generation"], "outputs": outputs}
        token.outputs = outputs
        token.manifest = manifest
        token.save(update_fields=["outputs", "manifest"])
        read_atoms = sorted({pin["atomId"] for pin in manifest.get("reads", []) if isinstance(pin, dict)})
        EraseDependency.objects.bulk_create(
            [EraseDependency(tenant=tenant, dependent_atom_id=r.atom_id, dependency_atom_id=atom_id, kind=DependencyKind.TOKEN_READ)
             for r in written for atom_id in read_atoms if atom_id != r.atom_id],
            ignore_conflicts=True)
