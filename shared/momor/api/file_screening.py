"""The caller's input guardrails on a call's files (guardrails/policy.py, "Files").

The input step (api/flow.py `_screened`) screens the canonical call's texts before planning; files are
converted later, per candidate (routing/conversion.py), so their text is screened here, as each
conversion is made: the same checks, the same per-call placeholders (a value masked in a prompt is
the same placeholder in a PDF's text), a block a 400 naming the file. A file that would reach a
provider as it is, unread by the checks, is refused with a 400 naming it where the policy blocks or
masks input, unless it says `unscreenedFiles: allow`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..call import Call
from ..errors import RequestError
from ..guardrails.refusal import GuardrailRefused
from ..guardrails.screen import Screening, screen_file
from ..messages import File, UserMessage, attached_files
from ..routing.conversion import TextScreen
from . import guardrail_services


def text_screen(screening: Screening) -> TextScreen | None:
    """How a converted file's text is screened for this call (None: the policy has no input checks)."""
    policy = screening.policy
    if not policy.input:
        return None

    async def screen(text: str, file: File, where: str) -> str:
        found = None
        if any(c.remote for c in policy.input):
            try:
                found = await guardrail_services.found_in_file(policy, text, screening, where)
            except GuardrailRefused as refused:
                raise GuardrailRefused(refused.check, f"file {file.name!r} ({where})") from None
        return screen_file(policy, text, where, file.name, screening, found)

    return screen


def unscreened_check(screening: Screening | None) -> Callable[[File, str], None] | None:
    """What a file sent as it is meets: a 400 naming it where the policy screens files, else nothing."""
    if screening is None or not screening.policy.screens_files:
        return None

    def refuse(file: File, where: str) -> None:
        raise RequestError(
            f"{where} ({file.name!r}) would reach the provider as it is, unread by your guardrails, which block "
            "or mask input: convert it to text with fileProcessing (its text is then screened), or have "
            "the policy say guardrails.unscreenedFiles: allow.", param=where)

    return refuse


def check_unconverted(call: Call, screening: Screening | None) -> None:
    """A call none of whose files will be converted (no fileProcessing): each goes as it is."""
    refuse = unscreened_check(screening)
    if refuse is None:
        return
    for i, message in enumerate(call.messages):
        kind = "files" if isinstance(message, UserMessage) else "result.documents"
        for j, file in enumerate(attached_files(message)):
            refuse(file, f"messages[{i}].{kind}[{j}]")


def files_masked(routed: Any, screening: Screening) -> bool:
    """Whether the call's files' converted text may be masked (when converted, after the cache is asked)."""
    processing = getattr(routed, "processing", None)
    return (processing is not None and processing.type != "none"
            and any(c.action == "mask" for c in screening.policy.input)
            and any(attached_files(m) for m in routed.call.messages))
