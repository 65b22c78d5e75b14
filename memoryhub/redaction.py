"""Secret redaction for memory files: credential shapes and the tenant's own secrets.

Contract: docs/memory-files.md ("Redaction"). Every memory-file write is redacted before it
is stored or staged, and `memoryhub.threats.scan` then scans that redacted text.

The rules are ours, not a library's: detect-secrets (the maintained PyPI rule set) cannot
tell where in a string a secret sits (some plugins report a regex group such as "ghp"
instead of the token), misses fine-grained GitHub tokens, Google API keys and bare AWS
secret keys, and with its entropy plugins on takes about 3 ms per KB while flagging
ordinary words. The formats below follow the vendors' documented token shapes; the
comparison is written down in docs/memory-files.md.

Three kinds of rules:

- whole tokens: vendor keys with a fixed prefix, JWTs, private-key blocks;
  the whole match becomes `REDACTED`;
- values (a `keep` group): the password in a URL's user info, the value in an assignment
  such as `password=...`, a 40-character AWS secret key near "aws"/"secret"; the text in
  front (group `keep`) stays, so the note still says what was there;
- the tenant's literal secrets.

Every repeat is bounded or runs over one character class that the next token cannot start
with, so redaction stays linear in the text length (bench/threats.py measures it).
`redact` is idempotent: `REDACTED` matches none of the token rules, and a value rule that
matches it again replaces it with itself.

Pure Python on purpose: no Django, like memoryhub/threats.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

REDACTED = "***REDACTED***"
MIN_SECRET_LENGTH = 8

# memoryhub's own API keys: `mh_<prefix>_<secret>` (tenants/models/keys.py: a 10-character
# prefix and a 40-character secret). Shorter parts are accepted so that a key format with
# a longer prefix or secret later is still caught; the test pins the real shape.
MH_KEY = r"\bmh_[a-z0-9]{6,32}_[A-Za-z0-9]{20,}"


@dataclass(frozen=True)
class _Rule:
    """One rule. `needs`: the rule cannot match unless the text (lower-cased when `folded`)
    contains one of these literals, so most notes skip most rules after a substring test.
    With a `keep` group, that part of the match stays and only the rest is replaced."""

    regex: re.Pattern[str]
    needs: tuple[str, ...]
    folded: bool = False

    def apply(self, text: str, folded: str) -> str:
        if not any(literal in (folded if self.folded else text) for literal in self.needs):
            return text
        if "keep" in self.regex.groupindex:
            return self.regex.sub(_keep_prefix, text)
        return self.regex.sub(REDACTED, text)


def _keep_prefix(match: re.Match[str]) -> str:
    return match.group("keep") + REDACTED


def _rule(source: str, *needs: str, folded: bool = False) -> _Rule:
    return _Rule(re.compile(source), needs, folded)


# Names whose value is a secret: a prefix or suffix is fine (DB_PASSWORD, GITHUB_TOKEN,
# aws_secret_access_key, client_secret).
_SECRET_NAME = (
    r"(?<![A-Za-z0-9])(?i:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)"
    r"[A-Za-z0-9_.-]{0,30}"
)
_NAME_LITERALS = ("pass", "pwd", "secret", "token", "key")
# One unquoted value character. The look-aheads on values are bounded (64 characters) so a
# run such as "token:token:token:..." costs a bounded amount per start.
_BARE = r"[^\s\"'`,;&]"
_NOT_A_NUMBER = rf"(?={_BARE}{{0,63}}[^\s\"'`,;&0-9])"

# Whole tokens first, then values whose name stays; in this order.
_RULES: tuple[_Rule, ...] = (
    _rule(MH_KEY, "mh_"),
    # OpenAI and Anthropic (sk-proj-..., sk-ant-...).
    _rule(r"\bsk-[A-Za-z0-9_-]{16,}", "sk-"),
    # Stripe secret and restricted keys (pk_ keys are publishable, not secret).
    _rule(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", "_live_", "_test_"),
    # GitHub classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained personal access tokens.
    _rule(r"\bgh[pousr]_[A-Za-z0-9]{20,}", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    _rule(r"\bgithub_pat_[A-Za-z0-9_]{22,}", "github_pat_"),
    _rule(r"\bglpat-[A-Za-z0-9_-]{20,}", "glpat-"),
    # AWS access key ids (long-lived AKIA, temporary ASIA).
    _rule(r"\b(?:AKIA|ASIA)[A-Z0-9]{12,}", "AKIA", "ASIA"),
    _rule(r"\bxox[abeprs]-[A-Za-z0-9-]{10,}", "xox"),
    # Google API keys are exactly "AIza" + 35 characters.
    _rule(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", "AIza"),
    # header.payload.signature, both JSON parts base64url of "{..." (so "eyJ"); an unsigned
    # token (alg none) has an empty signature. Starts only where a run of base64url
    # characters starts and never backtracks into it: "eyJ-eyJ-eyJ-..." stays linear.
    _rule(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+", "eyJ"),
    # The whole block; a block cut off before its END line is redacted to the end of the text.
    _rule(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
          r"(?:[\s\S]*?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)", "PRIVATE KEY"),
    # scheme://user:password@host: postgres, mysql, redis (empty user), amqp, https, ...
    _rule(r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@]{0,200}:)[^\s@/]{1,200}(?=@)", "://"),
    # name = value / name := value: an unquoted value up to a separator of the surrounding
    # text (space, quote, comma, semicolon, &), unless it is a plain number
    # ("max_tokens=4096" is a setting, not a secret).
    _rule(rf"(?P<keep>{_SECRET_NAME}[\"']?[ \t]{{0,8}}:?=[ \t]{{0,8}}){_NOT_A_NUMBER}{_BARE}+",
          *_NAME_LITERALS, folded=True),
    # name: value, as in YAML or prose: only a value of 6+ characters holding a digit,
    # since "Token: rotate monthly" is prose and "Password: hunter2" is not.
    _rule(rf"(?P<keep>{_SECRET_NAME}[\"']?[ \t]{{0,8}}:[ \t]{{0,8}})(?={_BARE}{{6}})"
          rf"(?={_BARE}{{0,63}}\d){_NOT_A_NUMBER}{_BARE}+", *_NAME_LITERALS, folded=True),
    # A quoted value without spaces, under 20 characters. Longer ones are left to the
    # scanner's hardcoded_secret rule, which refuses the write (docs/memory-files.md).
    _rule(rf"(?P<keep>{_SECRET_NAME}[\"']?[ \t]{{0,8}}(?::=|[:=])[ \t]{{0,8}}(?P<q>[\"'`]))"
          r"[^\s\"'`]{1,19}(?=(?P=q))", *_NAME_LITERALS, folded=True),
    # Authorization headers copied into a note: "Bearer <token>".
    _rule(r"(?P<keep>\b(?i:bearer)[ \t]{1,8})[A-Za-z0-9._~+/-]{20,}+=*", "bearer", folded=True),
    # A bare AWS secret access key: 40 base64 characters, one of them upper case, shortly
    # after "aws" or "secret" (alone it would also match long identifiers).
    _rule(r"(?P<keep>(?i:\baws|secret)[^\n]{0,40}?)(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]{0,39}[A-Z])"
          r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", "aws", "secret", folded=True),
)


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """Replace credentials and the tenant's own secrets with `REDACTED`.

    Tenant secrets are literal and case-sensitive; ones shorter than `MIN_SECRET_LENGTH`
    are ignored (they would redact ordinary words). They go first and longest first, so a
    secret that contains a credential-shaped or shorter secret part disappears whole.
    """
    usable = sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
    if usable:
        text = re.sub("|".join(re.escape(s) for s in usable), REDACTED, text)
    folded = text.lower()
    for rule in _RULES:
        text = rule.apply(text, folded)
    return text
