"""Threat scanner shared by memory files and Atoms: secret redaction and a pattern scan.

Contract: docs/memory-files.md (the threat scanner). Callers redact first, store the redacted text and scan
that same text, so a credential that `redact` removed can never trip `hardcoded_secret`.
`scan` then works in stages:

1. only the first `MAX_SCAN_CHARS` characters are looked at;
2. the raw text is searched for invisible or bidi characters; the first one becomes an
   `invisible_unicode` finding, always the first element of the result. The scan then
   goes on (it does not stop there) so a rescan can record every rule an entry breaks;
   those characters are dropped before the patterns run, so one cannot split a keyword;
3. the text is NFKC-normalised (full-width letters fold to ASCII);
4. the patterns run case-insensitively in table order, one finding per rule id: the text
   is lower-cased once (`_fold`) and the patterns are written in lower case.

"Near" means at most 8 words between the first-named term and the second, in that order.
A word is a run of `\\w` characters, except in the curl / wget / cat-style rules, where it is
a whitespace-separated shell argument: a URL is one argument however many dots it has.
Every filler has a bounded repeat count and alternates disjoint classes (`\\w` / `\\W`,
`\\s` / `\\S`, possessive where possible: Python 3.11+), so a match attempt never
backtracks more than a few words; the whole scan stays linear in the text length even for
a keyword repeated 10,000 times (see bench/threats.py for the figures).

Pure Python on purpose: no Django, so the engine and the tests can use it anywhere.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

# Redaction has its own module (its rule set is large); `threats.redact` stays the entry
# point that docs/memory-files.md names, so it is re-exported here.
from memoryhub.redaction import MIN_SECRET_LENGTH, REDACTED, redact

__all__ = ["MIN_SECRET_LENGTH", "PATTERNS_VERSION", "PATTERN_IDS", "REDACTED", "RULES", "Finding", "first_finding",
           "redact", "scan"]

# Bump on ANY change to a pattern, to the redaction rules or to the scan stages: stored
# entries scanned under an older version are queued for a rescan (memory_rescan).
# 2: redaction covers many more credential formats (memoryhub/redaction.py).
PATTERNS_VERSION = 2

MAX_SCAN_CHARS = 65_536
MATCH_PREVIEW_CHARS = 80
NEAR_WORDS = 8


@dataclass(frozen=True)
class Finding:
    """One rule hit. `codepoint` is set only for `invisible_unicode` ("U+200B")."""

    pattern: str
    codepoint: str | None
    match: str


# --- Invisible characters --------------------------------------------------------------------

# Zero-width space/joiners, word joiner, invisible operators, BOM, bidi embeddings and
# isolates. Emoji ZWJ sequences are caught too; the spec accepts that.
_INVISIBLE_RE = re.compile(r"[\u200b-\u200d\u2060\u2062-\u2064\ufeff\u202a-\u202e\u2066-\u2069]")


def _codepoint(char: str) -> str:
    return f"U+{ord(char):04X}"


# --- Pattern building blocks -----------------------------------------------------------------


def _gap(words: int) -> str:
    """Non-word separator with at most `words` words inside it; the next term follows it."""
    return rf"(?:\W++\w++){{0,{words}}}?\W+"


def _near(first: str, second: str, words: int = NEAR_WORDS) -> str:
    return f"(?:{first}){_gap(words)}(?:{second})"


def _shell_gap(args: int) -> str:
    """Whitespace with at most `args` shell arguments inside it."""
    return rf"(?:\s++\S++){{0,{args}}}?\s+"


def _any(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


def _words(*words: str) -> str:
    r"""Whole words; each item may be a small regex (`rules?`)."""
    return r"\b" + _any(*words) + r"\b"


def _phrase(text: str) -> str:
    """Fixed words with any short run of separators between them ("act  as-if")."""
    return r"\b" + r"\W{1,8}".join(re.escape(word) for word in text.split()) + r"\b"


def _forms(verb: str) -> list[str]:
    """The verb plus its -s / -ed / -ing forms: notes are not always in the imperative."""
    if verb in _IRREGULAR:
        return [verb, *_IRREGULAR[verb]]
    if verb.endswith("e"):
        return [verb, verb + "s", verb + "d", verb[:-1] + "ing"]
    if verb.endswith("y") and verb[-2] not in "aeiou":
        return [verb, verb[:-1] + "ies", verb[:-1] + "ied", verb + "ing"]
    plural = verb + "es" if verb.endswith(("ch", "sh", "ss", "x")) else verb + "s"
    return [verb, plural, verb + "ed", verb + "ing"]


# Full inflection lists where the regular rule would be wrong.
_IRREGULAR: dict[str, list[str]] = {
    "forget": ["forgets", "forgot", "forgotten", "forgetting"],
    "override": ["overrides", "overrode", "overridden", "overriding"],
    "run": ["runs", "ran", "running"],
    "eval": ["evals"],
    "send": ["sends", "sent", "sending"],
    "show": ["shows", "showed", "shown", "showing"],
    "tell": ["tells", "told", "telling"],
    "write": ["writes", "wrote", "written", "writing"],
    "overwrite": ["overwrites", "overwrote", "overwritten", "overwriting"],
    "submit": ["submits", "submitted", "submitting"],
    "transmit": ["transmits", "transmitted", "transmitting"],
}


def _verbs(*verbs: str) -> str:
    forms = {form for verb in verbs for form in _forms(verb)}
    return _words(*sorted(forms, key=len, reverse=True))


# --- The rule table (docs/memory-files.md), in order -------------------------------------------------------

_APOS = r"['\u2019]"  # typographic apostrophes survive NFKC
_YOU_ARE = r"\byou(?:\W{1,8}are|" + _APOS + "re)"
_INSTRUCTION_NOUN = _words("instructions?", "rules?", "prompts?")
_SENSITIVE_VAR = r"\$\{?\w*?(?:key|token|secret|passw(?:or)?d|credential)"
_C2_TOOL = _words("sliver", "havoc", "mythic")
_C2_CONTEXT = _words("c2", "implants?", "beacons?", "teamservers?", "frameworks?", "payloads?", "listeners?")
# A shell argument that looks like an option, a number, a quoted word or a path, never an
# English word: "head -n 5 .env" is a command, "use less memory than .env" is prose.
_SHELL_ARG = r"(?:[-+~$\"'\d]\S*+|[^\s./]*+[./]\S*+)"
_SECRET_FILE = r"\S*?(?:\.env(?:\.[\w-]+)?|credentials|\.netrc|\.npmrc|\.pypirc|\.pgpass|\.git-credentials)"
_ARG_END = r"(?=[\"'`;|&)>,.:!?]*(?:\s|\Z))"


def _curl_like(command: str) -> str:
    return rf"\b{command}\b{_shell_gap(NEAR_WORDS)}\S*?{_SENSITIVE_VAR}"


@dataclass(frozen=True)
class Rule:
    """One table row. `needs`: groups of literals; a match is impossible unless the folded
    text contains one literal of every group, so the regex is skipped otherwise (most
    ordinary text then runs only a handful of the rules)."""

    id: str
    regex: re.Pattern[str]
    needs: tuple[tuple[str, ...], ...]

    def could_match(self, folded: str) -> bool:
        return all(any(literal in folded for literal in group) for group in self.needs)


def _rule(rule_id: str, source: str, *needs: tuple[str, ...]) -> Rule:
    # No IGNORECASE: the text is lower-cased once (see `_fold`), which keeps the engine's
    # fast literal checks and makes the `needs` test exact. Patterns are written lowercase.
    return Rule(rule_id, re.compile(source), needs)


RULES: tuple[Rule, ...] = (
    _rule(
        "prompt_injection",
        _any(
            _near(
                _verbs("ignore", "forget", "override", "bypass"),
                _words("previous", "prior", "all", "above", "earlier", "system") + _gap(2) + _INSTRUCTION_NOUN,
            ),
            _phrase("system prompt override"),
        ),
        ("ignor", "forg", "overr", "bypass"),
        ("instruction", "rule", "prompt"),
    ),
    _rule(
        "disregard_rules",
        _any(
            _near(
                _verbs("disregard"),
                _words("rules?", "guidelines?", "instructions?", "polic(?:y|ies)", "restrictions?"),
            ),
            _near(_phrase("act as if"), _phrase("no restrictions")),
        ),
        ("disregard", "restrictions"),
    ),
    _rule(
        "hidden_instruction",
        _any(
            # The comment body may not hold another "<!--", so each opener scans only up to
            # the next one: linear however many openers there are. Unclosed comments count,
            # since a browser hides everything after them.
            # A keyword glued to a word by a hyphen is part of a tool directive
            # ("<!-- prettier-ignore -->"), not an instruction.
            r"<!--(?:(?!-->|<!--)[\s\S]){0,65536}?(?<!\w-)"
            + _words(r"ignor(?:e|es|ed|ing)", "instructions?", "systems?", "assistants?",
                     r"execut(?:e|es|ed|ing)", "secrets?", "send(?:s|ing)?"),
            r"\bdisplay\s{0,8}:\s{0,8}none\b",
        ),
        ("<!--", "display"),
    ),
    _rule(
        "translate_execute",
        _near(_verbs("translate"), _words("and", "then") + _gap(1) + _verbs("execute", "run", "eval")),
        ("translat",),
    ),
    _rule(
        "deception_hide",
        _near(
            _any(r"\bdo\s{1,8}not", r"\bdon" + _APOS + "?t", r"\bnever")
            + _gap(2)
            + _verbs("tell", "inform", "mention", "reveal", "show"),
            _words("users?"),
        ),
        ("user",),
        ("not", "don", "never"),
    ),
    _rule("exfil_curl", _curl_like("curl"), ("curl",), ("$",)),
    _rule("exfil_wget", _curl_like("wget"), ("wget",), ("$",)),
    _rule(
        "read_secrets",
        rf"\b(?:cat|less|head|tail|bat)(?:\s++{_SHELL_ARG}){{0,3}}?\s+{_SECRET_FILE}{_ARG_END}",
        ("env", "credentials", "netrc", "npmrc", "pypirc", "pgpass"),
    ),
    _rule(
        "role_hijack",
        _any(
            _YOU_ARE + r"\W{1,8}now\W{1,8}(?:a|an|the)\b",
            r"\bpretend(?:s|ed|ing)?\W{1,8}to\W{1,8}be\b",
            r"\bfrom\W{1,8}now\W{1,8}on\W{1,8}" + _YOU_ARE + r"\b",
            _phrase("respond without restrictions"),
            _phrase("your new name is"),
        ),
        ("you", "pretend", "respond"),
    ),
    _rule(
        "prompt_leak",
        _near(
            _verbs("output", "print", "reveal", "show", "repeat", "dump", "leak"),
            _any(r"\bsystem\W{1,8}prompts?\b", r"\b(?:initial|hidden)\W{1,8}instructions?\b"),
        ),
        ("prompt", "instruction"),
    ),
    _rule(
        "c2_beacon",
        _near(
            _any(
                _verbs("beacon", "report", "register", "pull", "fetch", "poll"),
                r"\bcheck(?:s|ed|ing)?\W{1,3}in\b",
                r"\bphon(?:e|es|ed|ing)\W{1,3}home\b",
            ),
            _any(
                _words("c2", "controllers?", "operators?", "teamservers?", "listeners?"),
                r"\b(?:command|control)\W{1,3}servers?\b",
            ),
        ),
        ("c2", "controller", "operator", "server", "listener"),
    ),
    _rule(
        "c2_tooling",
        _any(
            r"\bcommand(?:\W{1,3}and\W{1,3}|\s{0,3}&\s{0,3})control\b",
            r"\bcobalt\W{1,3}strike\b",
            _words("metasploit", "brainworm"),
            # Deliberate: these names are ordinary words ("caused havoc") unless C2 talk is near.
            _near(_C2_TOOL, _C2_CONTEXT, 3),
            _near(_C2_CONTEXT, _C2_TOOL, 3),
        ),
        ("command", "cobalt", "metasploit", "brainworm", "sliver", "havoc", "mythic"),
    ),
    _rule(
        "send_to_url",
        _near(
            _verbs("send", "post", "upload", "forward", "exfiltrate", "transmit", "submit"),
            r"\bto\W{1,3}https?://",
        ),
        ("http",),
    ),
    _rule(
        "context_exfil",
        _near(
            _verbs("share", "send", "forward", "upload", "leak", "dump", "include", "reveal"),
            _any(
                r"\b(?:chat|conversation)\W{1,3}histor(?:y|ies)\b",
                r"\b(?:full|entire)\W{1,3}context\b",
                r"\ball\W{1,3}(?:(?:of\W{1,3})?(?:your|my|our|the)\W{1,3})?memories\b",
            ),
        ),
        ("histor", "context", "memories"),
    ),
    _rule("ssh_backdoor", r"authorized_keys", ("authorized_keys",)),
    _rule(
        "ssh_access",
        # Deliberate: only a verb in front makes it an action; naming the path passes.
        _words("cat", "cp", "copy", "scp", "rsync", "read", "print", "send", "upload", "edit", "write",
               "append", "echo", "rm", "chmod", "mv", "tar")
        + r"(?:\W++\w++){0,3}?\W*?(?:\$\{?home\}?/)?(?<!\w)\.ssh\b",
        (".ssh",),
    ),
    _rule(
        "agent_config_mod",
        _near(
            _verbs("edit", "modify", "write", "append", "overwrite", "change", "update", "add", "replace",
                   "delete", "create"),
            _any(
                r"(?<![\w.-])(?:agents|claude|gemini)\.md\b",
                r"(?<![\w-])\.cursorrules\b",
                r"\bcopilot-instructions\.md\b",
            ),
        ),
        (".md", ".cursorrules"),
    ),
    _rule(
        "hardcoded_secret",
        # A prefix is fine (DB_PASSWORD, GITHUB_TOKEN); the key may be quoted ("password": ...).
        r"(?<![a-z0-9])(?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key)(?:[_-]?key)?"
        r"[\"']?\s{0,8}(?::=|[:=])\s{0,8}"
        r"(?:\"[^\s\"]{20,}+\"|'[^\s']{20,}+'|`[^\s`]{20,}+`)",
        ("pass", "pwd", "token", "secret", "key"),
        ("\"", "'", "`"),
    ),
)
PATTERN_IDS: tuple[str, ...] = tuple(rule.id for rule in RULES)


# --- Scanning --------------------------------------------------------------------------------

# Python's case-insensitive matching uses the simple lower-case mapping, under which U+0130
# (capital I with dot) is "i"; str.lower() would give "i" + a combining dot and change the
# length. The dotless i (U+0131) is folded too, a cheap look-alike. All else is 1:1.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i"})


def _fold(text: str) -> str:
    return text.translate(_FOLD).lower()


def _iter_findings(text: str) -> Iterator[Finding]:
    window = text[:MAX_SCAN_CHARS]
    hidden = _INVISIBLE_RE.search(window)
    if hidden is not None:
        yield Finding(pattern="invisible_unicode", codepoint=_codepoint(hidden.group()), match=hidden.group())
        window = _INVISIBLE_RE.sub("", window)
    normalized = unicodedata.normalize("NFKC", window)
    folded = _fold(normalized)
    # Report the text as written when folding kept every offset (practically always).
    shown = normalized if len(normalized) == len(folded) else folded
    for rule in RULES:
        if not rule.could_match(folded):
            continue
        found = rule.regex.search(folded)
        if found is not None:
            preview = shown[found.start() : found.end()][:MATCH_PREVIEW_CHARS]
            yield Finding(pattern=rule.id, codepoint=None, match=preview)


def scan(text: str) -> list[Finding]:
    """All findings: `invisible_unicode` first when present, then one per rule in table order."""
    return list(_iter_findings(text))


def first_finding(text: str) -> Finding | None:
    """The finding THREAT_BLOCKED names, or None; stops at the first hit."""
    return next(_iter_findings(text), None)
