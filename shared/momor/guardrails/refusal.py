"""A guardrail's refusals, in the words every dialect's error writer takes.

    GuardrailRefused (RequestError, 400, code guardrail_refused)   an input check with action block fired
    OutputBlocked (ProviderError, written as 400)                  an output check fired on a stream
    GuardrailUnavailable (MomorError, 503)                         a service's check could not run (failure closed)
    OutputUnavailable (ProviderError, written as 503)              that, on a stream's output

The message names the check and whose policy it is, never the text it matched."""

from __future__ import annotations

from ..errors import MomorError, ProviderError, RequestError
from .policy import Check

CODE = "guardrail_refused"


def _detail(check: Check, where: str) -> str:
    return (f"{CODE}: the {check.origin}'s guardrail {check.name!r} ({check.check}) refused the {where}; "
            "the matched text is not repeated here.")


class GuardrailRefused(RequestError):
    code = CODE

    def __init__(self, check: Check, where: str = "request") -> None:
        super().__init__(_detail(check, where), status=400)
        self.check = check


class GuardrailUnavailable(MomorError):
    """A check a service answers could not run, and its `failure` is closed (the default for mask and
    block): the call is refused, never let through unchecked."""

    status = 503
    code = "guardrail_unavailable"

    def __init__(self, check: Check, why: str) -> None:
        super().__init__(f"guardrail_unavailable: the {check.origin}'s guardrail {check.name!r} ({check.check}) "
                         f"could not run ({why}); the call was not sent.", status=503)
        self.check, self.why = check, why


class OutputBlocked(ProviderError):
    """Raised inside a stream's events once output has begun: each door ends the stream with its error
    frame (status 400, code guardrail_refused) and writes nothing after it."""

    frame_status = 400
    code = CODE

    def __init__(self, check: Check) -> None:
        super().__init__(_detail(check, "answer"), kind="refused", after_output=True)
        self.check = check


class OutputUnavailable(ProviderError):
    """An output check a service answers could not run on a stream (failure closed): each door ends the
    stream with its error frame (status 503, code guardrail_unavailable), nothing unchecked after it."""

    frame_status = 503
    code = "guardrail_unavailable"

    def __init__(self, check: Check, why: str) -> None:
        super().__init__(f"guardrail_unavailable: the {check.origin}'s guardrail {check.name!r} ({check.check}) "
                         f"could not run on the answer ({why}); the rest of it is not sent.", kind="refused",
                         after_output=True)
        self.check = check
