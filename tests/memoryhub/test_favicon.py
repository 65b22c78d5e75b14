"""/favicon.ico: clients that ignore the page's icon link are sent to the static SVG."""

from __future__ import annotations


def test_it_redirects_to_the_static_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("/img/favicon.svg")
    assert client.get(response["Location"]).status_code == 200
