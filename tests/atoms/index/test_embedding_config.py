"""A tenant's atoms_config.embedding (docs/atoms.md "Semantic index"): allow-listed classes only; a change bumps
the index generation, so entries of the old encoder stop counting and cursors expire."""

from __future__ import annotations

from atoms.models import AtomStore


def patch(client, config):
    return client.client.patch("/api/v1/tenant", {"atoms_config": config}, format="json")


def test_a_tenant_may_switch_its_provider_and_the_generation_goes_up(Z):
    before = AtomStore.get_or_create_for(Z.key.tenant).index_generation
    response = patch(Z, {"embedding": None})
    assert response.status_code == 200, response.content
    store = AtomStore.objects.get(tenant=Z.key.tenant)
    assert store.index_generation == before + 1
    assert Z.post("index/update", {}).json()["error"]["code"] == "INDEX_NOT_READY"
    assert patch(Z, {"embedding": None}).status_code == 200
    assert AtomStore.objects.get(tenant=Z.key.tenant).index_generation == before + 1  # unchanged config


def test_it_refuses_a_class_outside_the_allow_list(Z):
    response = patch(Z, {"embedding": {"class": "os.system", "options": {}}})
    assert response.status_code == 400
    assert "embedding.class" in response.content.decode()
    assert AtomStore.get_or_create_for(Z.key.tenant).config == {}
