"""Settings come from the environment; production refuses unsafe defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "ALLOWED_HOSTS", "MEMORYHUB_ENV", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**clean, **env},
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_production_requires_a_secret_key():
    result = _run("check", MEMORYHUB_ENV="production", ALLOWED_HOSTS="example.com")
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_production_requires_allowed_hosts():
    result = _run("check", MEMORYHUB_ENV="production", SECRET_KEY="x" * 64)
    assert result.returncode != 0
    assert "ALLOWED_HOSTS is required" in result.stderr


def test_check_deploy_is_clean_in_production():
    result = _run(
        "check", "--deploy", "--fail-level", "WARNING",
        MEMORYHUB_ENV="production", SECRET_KEY="k" * 20 + "-Zq81!x" * 8, ALLOWED_HOSTS="memoryhub.example.com",
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "no issues" in result.stdout


def test_a_bad_boolean_is_refused():
    result = _run("check", DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


def test_the_local_secret_key_is_generated_once(tmp_path):
    for _ in range(2):
        assert _run("check", MEMORYHUB_VAR_DIR=str(tmp_path)).returncode == 0
    assert len((tmp_path / "secret_key").read_text()) > 50
    assert oct((tmp_path / "secret_key").stat().st_mode)[-3:] == "600"


def test_a_bad_random_page_cost_is_refused():
    # Settings are read before any connection: no PostgreSQL server is needed to refuse it.
    result = _run("check", DATABASE_URL="postgres://nobody@127.0.0.1:1/none", DB_RANDOM_PAGE_COST="cheap")
    assert result.returncode != 0
    assert "DB_RANDOM_PAGE_COST must be a number" in result.stderr


@pytest.mark.django_db
def test_postgresql_connections_plan_with_a_cached_working_set():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only (set DATABASE_URL to a postgres:// URL): SQLite has no planner costs")
    configured = os.environ.get("DB_RANDOM_PAGE_COST", "1.1").strip()
    if not configured:
        pytest.skip("DB_RANDOM_PAGE_COST is empty here: the server's own setting applies")
    with connection.cursor() as cursor:
        cursor.execute("SHOW random_page_cost")
        assert float(cursor.fetchone()[0]) == float(configured)


def test_postgresql_connections_prepare_on_the_second_run_unless_turned_off():
    # Only the read path's server-binding cursors prepare (memoryhub/prepared.py); settings
    # are read before any connection, so no server is needed.
    code = ("from django.conf import settings; "
            "print(settings.DATABASES['default']['OPTIONS'].get('prepare_threshold', 'absent'))")

    def threshold(**env: str) -> str:
        result = _run("shell", "-c", code, **env)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().splitlines()[-1]

    url = "postgres://nobody@127.0.0.1:1/none"
    assert threshold(DATABASE_URL=url) == "1"
    assert threshold(DATABASE_URL=url, DB_PREPARED_STATEMENTS="off") == "None"
    assert threshold(DATABASE_URL="sqlite://:memory:") == "absent"
    result = _run("check", DATABASE_URL=url, DB_PREPARED_STATEMENTS="sometimes")
    assert result.returncode != 0
    assert "DB_PREPARED_STATEMENTS must be a boolean" in result.stderr


def _options(**env: str) -> str:
    code = "from django.conf import settings; print(settings.DATABASES['default']['OPTIONS'].get('options', ''))"
    result = _run("shell", "-c", code, **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_the_page_cost_is_added_to_the_options_of_the_database_url():
    url = "postgres://nobody@127.0.0.1:1/none?currentSchema=memory"
    assert _options(DATABASE_URL=url, DB_RANDOM_PAGE_COST="1.1") == "-c search_path=memory -c random_page_cost=1.1"
    own = "postgres://nobody@127.0.0.1:1/none?options=-c%20random_page_cost%3D2"
    assert _options(DATABASE_URL=own, DB_RANDOM_PAGE_COST="1.1") == "-c random_page_cost=2"
    assert _options(DATABASE_URL=url, DB_RANDOM_PAGE_COST="") == "-c search_path=memory"
