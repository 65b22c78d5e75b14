"""§4.4 checks 4-6 and 8 for writes made with input tokens, and recording the outputs.

observe (which issues tokens) is not built yet, so no token can pass `token_for_use`
today; these checks run once it exists.
"""

from __future__ import annotations

from typing import Any

from atoms.errors import AtomError
from atoms.models import InputToken, Revision
from atoms.services.write_plan import WritePlan


def check_tokens_for_commit(plan: WritePlan, tokens: dict[str, InputToken]) -> None:
    raise AtomError("INVALID_INPUT", "Input tokens are not accepted yet: observe is not available.")


def record_token_outputs(plan: WritePlan, tokens: dict[str, InputToken], revisions: dict[str, Revision]) -> Any:
    raise AtomError("INVALID_INPUT", "Input tokens are not accepted yet: observe is not available.")
