"""Secret redaction (memoryhub/redaction.py, docs/memory-files.md "Redaction"): each
credential format with a look-alike that must stay, the tenant's secrets with the exact
minimum length, memoryhub's own keys, idempotence and linear time."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from memoryhub import threats
from memoryhub.redaction import MIN_SECRET_LENGTH, REDACTED, redact
from tenants.models.keys import ApiKey

# (text, what redaction leaves of it). Each format, including those the first release missed.
CAUGHT = [
    ("Deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789 for CI.", f"Deploy token is {REDACTED} for CI."),
    ("pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz end", f"pat {REDACTED} end"),
    ("app gho_abcdefghijklmnopqrstuvwxyz end", f"app {REDACTED} end"),
    ("gitlab glpat-abcdefghij0123456789 end", f"gitlab {REDACTED} end"),
    ("stripe sk_live_abcdefghijklmnopqrstuvwx end", f"stripe {REDACTED} end"),
    ("stripe rk_test_abcdefghijklmnop end", f"stripe {REDACTED} end"),
    ("openai sk-proj-abcdefghijklmnop end", f"openai {REDACTED} end"),
    ("aws ASIAABCDEFGHIJKLMNOP end", f"aws {REDACTED} end"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", f"aws_secret_access_key = {REDACTED}"),
    ("The AWS secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY today", f"The AWS secret is {REDACTED} today"),
    ("db password=hunter2hunter2 on staging", f"db password={REDACTED} on staging"),
    ("DB_PASSWORD := correct-horse", f"DB_PASSWORD := {REDACTED}"),
    ("https://x.io/cb?access_token=abc123xyz&page=2", f"https://x.io/cb?access_token={REDACTED}&page=2"),
    ("Password: hunter2", f"Password: {REDACTED}"),
    ('password="hunter2"', f'password="{REDACTED}"'),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
     f"jwt {REDACTED} ok"),
    ("unsigned eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9. ok", f"unsigned {REDACTED} ok"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv ok", f"google {REDACTED} ok"),
    ("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nafter",
     f"key:\n{REDACTED}\nafter"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut off)", REDACTED),
    ("DATABASE_URL=postgres://app:s3cretpass@db.example.com:5432/app",
     f"DATABASE_URL=postgres://app:{REDACTED}@db.example.com:5432/app"),
    ("cache redis://:hunter2hunter2@cache:6379/0", f"cache redis://:{REDACTED}@cache:6379/0"),
    ("curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345'", f"curl -H 'Authorization: Bearer {REDACTED}'"),
]

# Look-alikes: the same shapes, one detail off, and ordinary notes near the keywords.
LEFT_ALONE = [
    "see github_pat_short",
    "gho_abcdefghijklmnopqrs is too short",
    "glpat-abcdefghij is too short",
    "sk_live_abc is too short",
    "pk_live_abcdefghijklmnopqrstuvwx is publishable",
    "aws ASIAabcdefghijklmnop is lower case",
    "the AWS secret is in the vault, see 3f786850e387550fdab836ed7e6dc881de23001b",
    "max_tokens=4096 for summaries",
    "Token: rotate monthly",
    "password: 'see vault'",
    "Passwords: 2 per account",
    "eyJhbGciOiJIUzI1NiJ9.notajwt",
    "AIzaSyA12345 is not a whole key",
    "-----BEGIN PUBLIC KEY----- is fine to keep",
    "-----BEGIN CERTIFICATE-----",
    "REDIS_URL=redis://127.0.0.1:6379/3",
    "https://example.com:8443/path@v2",
    "Bearer tokens expire after an hour",
    "Project uses Bun and Nx; deploys on Fridays.",
]


@pytest.mark.parametrize(("text", "expected"), CAUGHT, ids=[text[:24] for text, _ in CAUGHT])
def test_each_credential_format_is_redacted(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_look_alikes_and_ordinary_notes_are_left_alone(text):
    assert redact(text) == text


@pytest.mark.parametrize(("text", "expected"), CAUGHT, ids=[text[:24] for text, _ in CAUGHT])
def test_redacting_twice_changes_nothing(text, expected):
    assert redact(expected) == expected


def test_a_memoryhub_api_key_is_redacted():
    _, raw = ApiKey.new_raw_key()
    assert redact(f"The agent key is {raw}, keep it safe") == f"The agent key is {REDACTED}, keep it safe"


def test_a_memoryhub_key_prefix_alone_is_left_alone():
    # The prefix is the key's public id; a truncated key is not a credential.
    assert redact("key mh_abcdefghij_short") == "key mh_abcdefghij_short"


def test_a_tenant_secret_of_exactly_the_minimum_length_is_redacted():
    secret = "x" * (MIN_SECRET_LENGTH - 4) + "1234"
    assert len(secret) == MIN_SECRET_LENGTH == 8
    assert redact(f"vault {secret} ok", [secret]) == f"vault {REDACTED} ok"


def test_a_tenant_secret_one_character_short_of_the_minimum_is_ignored():
    secret = "x" * (MIN_SECRET_LENGTH - 5) + "1234"
    assert len(secret) == MIN_SECRET_LENGTH - 1
    assert redact(f"vault {secret} ok", [secret]) == f"vault {secret} ok"


def test_tenant_secrets_go_before_credential_shapes():
    secret = "prefix-ghp_abcdefghijklmnopqrstuvwxyz"
    assert redact(f"a {secret} b", [secret]) == f"a {REDACTED} b"


def test_a_long_quoted_assignment_is_left_to_the_scanner_which_refuses_it():
    # docs/memory-files.md "Redaction": the scanner's hardcoded_secret rule must still block this one.
    text = "password: 'abcdefghijklmnopqrstuvwxyz'"
    assert redact(text) == text
    assert [f.pattern for f in threats.scan(redact(text))] == ["hardcoded_secret"]


def test_threats_redact_is_this_redaction():
    assert threats.redact is redact
    assert threats.REDACTED == REDACTED and threats.MIN_SECRET_LENGTH == MIN_SECRET_LENGTH


# --- Linear time ------------------------------------------------------------------------------

# Each starts a rule's match and repeats without completing it, so the engine retries at
# every repetition; a rule that backtracked over the rest of the text would be quadratic.
CRAFTED = ["eyJ-", "eyJabcdefgh.", "token:", "token:1", "password=", "secret ", "aws ", "http://a:", "x://a:b",
           "-----BEGIN PRIVATE KEY-----", "Bearer ", "mh_abcdefgh_", "AIza", "sk-", "'password': '"]
LARGE = threats.MAX_SCAN_CHARS // 2
PIECES = 16
GROWTH_LIMIT = 4.0
REPEATS = 3


def _repeated(keyword: str, chars: int) -> str:
    return (keyword * (chars // len(keyword) + 1))[:chars]


def _best_of_five(work: Callable[[], object]) -> float:
    # Each timing repeats the work so that even the fastest cases take milliseconds, and the
    # best of five rounds ignores a round that lost the CPU on a busy machine.
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(REPEATS):
            work()
        timings.append(time.perf_counter() - started)
    return min(timings)


@pytest.mark.parametrize("keyword", CRAFTED)
def test_redacting_a_crafted_input_takes_linear_time(keyword):
    """Bound on growth, not milliseconds: one text of LARGE characters may take at most
    GROWTH_LIMIT times as long as PIECES texts of 1/PIECES of it (linear work: about 1,
    quadratic: about PIECES)."""
    small, large = _repeated(keyword, LARGE // PIECES), _repeated(keyword, LARGE)
    figures = []
    # Up to three attempts: a linear rule passes the first on a quiet machine, and a loaded one
    # cannot make a quadratic rule (about PIECES times) pass any of them.
    for _ in range(3):
        pieces = _best_of_five(lambda: [redact(small, ["tenant-secret-1"]) for _ in range(PIECES)])
        whole = _best_of_five(lambda: redact(large, ["tenant-secret-1"]))
        figures.append(f"{pieces * 1000:.1f} ms vs {whole * 1000:.1f} ms")
        if whole / pieces < GROWTH_LIMIT:
            return
    raise AssertionError(f"{keyword!r}: " + "; ".join(figures))
