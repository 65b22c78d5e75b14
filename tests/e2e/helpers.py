"""Steps the browser tests share."""

from __future__ import annotations

from typing import Any

from tests.conftest import PASSWORD


def log_in(page: Any, username: str, tenant: str = "acme") -> None:
    """Log in through the form and wait for the tenant's dashboard."""
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"**/t/{tenant}/")
