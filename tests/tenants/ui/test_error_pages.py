"""The 403 and 404 pages keep the layout, and every page links a favicon that exists."""

from __future__ import annotations

import re

from django.contrib.staticfiles import finders


def test_a_missing_role_gets_403_with_the_tenant_navigation(carol, client):
    client.force_login(carol)
    response = client.get("/t/acme/keys/")
    assert response.status_code == 403
    html = response.content.decode()
    assert 'data-testid="forbidden"' in html
    assert '<nav aria-label="Main" class="mainnav">' in html and 'href="/t/acme/audit/"' in html
    assert "Your role in Acme Corp (viewer) does not allow this page. This page needs the admin role." in html
    assert 'href="/t/acme/">Back to the Acme Corp dashboard</a>' in html


def test_another_tenant_stays_404_without_its_navigation(dave, client, acme):
    client.force_login(dave)
    response = client.get("/t/acme/keys/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'data-testid="not-found"' in html and "Acme" not in html and 'href="/t/acme/' not in html
    assert 'href="/">Back to your tenants</a>' in html


def test_pages_link_a_favicon_that_exists(carol, client):
    client.force_login(carol)
    html = client.get("/t/acme/").content.decode()
    href = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', html).group(1)
    assert href.endswith(".svg") and "favicon" in href
    path = finders.find("img/favicon.svg")
    assert path is not None and open(path, encoding="utf-8").read().startswith("<svg")
