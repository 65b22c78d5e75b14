"""The neighbourhood picture on the atom page: a line instead of an empty frame, and a
crowded atom's picture cut into "+N more" rows that point at the links tables."""

from __future__ import annotations

import re

from atoms.ui.graph import MAX_PER_SIDE
from tests.atoms.ui.review_helpers import page, write


def url(atom_id: str) -> str:
    return page("acme", f"{atom_id}/")


def svg_of(html: str) -> str:
    found = re.search(r"<svg.*?</svg>", html, re.DOTALL)
    assert found is not None
    return found.group(0)


def test_an_atom_without_links_says_so_instead_of_drawing_an_empty_frame(carol, client, acme):
    lonely = write(acme, "Nobody links here.")
    client.force_login(carol)
    html = client.get(url(lonely)).content.decode()
    assert '<p class="muted" data-testid="graph-empty">No links yet.</p>' in html
    assert "<svg" not in html and 'data-testid="atom-graph"' not in html


def test_an_atom_with_one_link_in_draws_the_picture(carol, client, acme):
    target = write(acme, "Linked to.")
    write(acme, "Linker", links=[{"role": "about", "atom": target}])
    client.force_login(carol)
    html = client.get(url(target)).content.decode()
    assert "No links yet." not in html
    assert svg_of(html).count("<circle") == 2


def test_forty_neighbours_draw_full_columns_with_more_rows_pointing_at_the_tables(carol, client, acme):
    targets = [write(acme, f"target {i} with a text long enough to be cut in its column") for i in range(20)]
    hub = write(acme, "hub", links=[{"role": "member", "atom": t} for t in targets])
    for i in range(20):
        write(acme, f"linker {i}", links=[{"role": "uses", "atom": hub}])
    client.force_login(carol)
    response = client.get(url(hub))
    html = response.content.decode()
    svg = svg_of(html)
    assert svg.count('<a href="/t/acme/atoms/') == 2 * MAX_PER_SIDE
    assert '<a href="#out-h" class="node more"' in svg and '<a href="#in-h" class="node more"' in svg
    assert svg.count(">+9 more</text>") == 2
    assert 'id="out-h"' in html and 'id="in-h"' in html  # the more rows' targets exist
    assert "style=" not in svg
    assert response.context_data["graph_hidden"] == 18
