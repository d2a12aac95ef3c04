"""The native route's generation with file processing (seed 000 `fileProcessing`): the conversions
(routing/conversion.py) run as a routing step between the plan and the attempt loop, and the loop
sends each candidate its converted messages. With `none` it is the plain generation. The caller's
input guardrails screen each converted file's text and refuse a file sent as it is where they would
not read it (api/file_screening.py)."""

from __future__ import annotations

from starlette.responses import Response

from ..errors import RequestError
from ..routing.conversion import Converter, check_count, converting_adjust, planned, prepare
from ..routing.fetch import check_file_urls
from .file_screening import text_screen, unscreened_check
from .flow import Prepared, generate


async def generate_processed(p: Prepared) -> Response:
    processing = p.routed.processing
    if processing is None or processing.type == "none":
        return await generate(p)  # its files were checked as unconverted (api/flow.py _screened)
    if p.zdr:  # the caller's organization holds every call to zero data retention
        raise RequestError(f"fileProcessing: {processing.type!r} is refused under zero data retention; only none "
                           "is allowed.", param="fileProcessing")
    await check_file_urls(p.routed.call.messages)  # a URL Momor will not fetch: 400 before any candidate
    catalog = await p.backend.catalog()
    converter = Converter(catalog, p.routed.prio, p.resolve_key, p.recorder, p.routed.network_timeout)
    if p.screening is not None:
        converter.screen = text_screen(p.screening)
        converter.unscreened = unscreened_check(p.screening)
    # Bounded before the first is made (issue 33); their cost was held with the call's (flow.py).
    check_count(planned(p.routed.call, processing.type, processing.types, converter, p.candidates))
    convert_for = prepare(p.routed.call, processing.type, processing.types, converter)
    p.routed.adjust = converting_adjust(p.routed.call.messages, convert_for, p.routed.adjust)
    return await generate(p)
