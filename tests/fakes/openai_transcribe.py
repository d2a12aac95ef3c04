"""OpenAI's audio transcription API (`POST /v1/audio/transcriptions`), faked as strictly as the real one.

The body must be multipart/form-data with a `file` part (a file name and bytes) and a `model`
field; `response_format` is json (default), text, srt, verbose_json or vtt, and the gpt-4o
transcribe models take only json or text; `language` is ISO-639-1; anything else is refused with
OpenAI's error object. The file's extension must be one the API reads and a .wav must be a
readable WAV, as the real API decodes the audio. A file over 25 MB is a 413.

The default transcript is deterministic: "Transcript of <name> (<seconds> s)." for a WAV, else of
<bytes>; a scripted Reply's text replaces it. Usage follows the model: whisper models report the
audio's duration (`{"type": "duration", "seconds"}`), others tokens (`{"type": "tokens", ...}`).
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import math
import re
import sys
import wave
from typing import Any

from .errors import Invalid
from .interface import Address, Setup
from .openai_responses import check_auth, error_body, new_request_id, response_headers  # noqa: F401 (the wire's API)

MAX_BYTES = 25 * 1024 * 1024
FORMATS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
RESPONSE_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
FIELDS = {"file", "model", "language", "prompt", "response_format", "temperature", "timestamp_granularities[]",
          "include[]", "chunking_strategy", "stream"}
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


def parse_form(content_type: str, raw: bytes) -> tuple[dict[str, str], dict[str, Any] | None]:
    """(text fields, the file part {filename, content_type, data}) of a multipart/form-data body."""
    if not content_type.lower().startswith("multipart/form-data") or "boundary=" not in content_type:
        raise Invalid("Invalid Content-Type header (multipart/form-data with a boundary is required).")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + raw)
    if not message.is_multipart():
        raise Invalid("Could not parse multipart form.")
    fields: dict[str, str] = {}
    upload: dict[str, Any] | None = None
    for part in message.iter_parts():
        if part.get_content_disposition() != "form-data" or not part.get_param("name", header="content-disposition"):
            raise Invalid("Could not parse multipart form.")
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        if name == "file":
            filename = part.get_filename()
            if not filename:
                raise Invalid("The 'file' part must be a file upload with a file name.", "file")
            upload = {"filename": filename, "content_type": part.get_content_type(), "data": data}
        else:
            fields[name] = data.decode("utf-8")
    return fields, upload


def validate(fields: dict[str, str], upload: dict[str, Any] | None) -> None:
    for name in fields:
        if name not in FIELDS:
            raise Invalid(f"Unrecognized request argument supplied: {name}", name)
    if upload is None:
        raise Invalid("1 validation error for Request\nbody -> file\n  field required (type=value_error.missing)")
    if not fields.get("model"):
        raise Invalid("you must provide a model parameter", "model")
    if len(upload["data"]) > MAX_BYTES:
        raise Invalid(f"Maximum content size limit ({MAX_BYTES}) exceeded ({len(upload['data'])} bytes read)",
                      status=413)
    extension = upload["filename"].rsplit(".", 1)[-1].lower() if "." in upload["filename"] else ""
    if extension not in FORMATS:
        raise Invalid(f"Invalid file format. Supported formats: {list(FORMATS)}", "file")
    if extension == "wav" and wav_seconds(upload["data"]) is None:
        raise Invalid("Audio file might be corrupted or unsupported", "file", code="invalid_value")
    fmt = fields.get("response_format", "json")
    if fmt not in RESPONSE_FORMATS:
        raise Invalid(f"'{fmt}' is not one of {list(RESPONSE_FORMATS)} - 'response_format'", "response_format")
    if "transcribe" in fields["model"] and fmt not in ("json", "text"):
        raise Invalid(f"response_format '{fmt}' is not compatible with model '{fields['model']}'. "
                      "Use 'json' or 'text' instead.", "response_format", code="unsupported_value")
    if "language" in fields and not _LANGUAGE.match(fields["language"]):
        raise Invalid(f"Invalid language '{fields['language']}'. Language parameter must be specified in "
                      "ISO-639-1 format.", "language")


def wav_seconds(data: bytes) -> float | None:
    try:
        with wave.open(io.BytesIO(data)) as w:
            return w.getnframes() / w.getframerate() if w.getframerate() else None
    except (wave.Error, EOFError, ValueError):
        return None


def recorded(fields: dict[str, str], upload: dict[str, Any] | None) -> dict[str, Any]:
    """What the request log keeps: the fields, and the file without its bytes."""
    out: dict[str, Any] = dict(fields)
    if upload is not None:
        out["file"] = {"filename": upload["filename"], "contentType": upload["content_type"],
                       "size": len(upload["data"])}
    return out


def answer(fields: dict[str, str], upload: dict[str, Any], text: str | None) -> tuple[str, dict[str, Any] | str]:
    """(content type, body) of a good answer."""
    seconds = wav_seconds(upload["data"])
    if text is None:
        length = f"{seconds:.2f} s" if seconds is not None else f"{len(upload['data'])} bytes"
        text = f"Transcript of {upload['filename']} ({length})."
    if fields.get("response_format") == "text":
        return "text/plain; charset=utf-8", text + "\n"
    if fields["model"].startswith("whisper"):
        usage: dict[str, Any] = {"type": "duration", "seconds": math.ceil(seconds or 1)}
    else:
        audio_tokens = max(1, round((seconds or 1) * 10))
        prompt_tokens = len(fields.get("prompt", "").split())
        output = len(text.split())
        usage = {"type": "tokens", "input_tokens": audio_tokens + prompt_tokens,
                 "input_token_details": {"text_tokens": prompt_tokens, "audio_tokens": audio_tokens},
                 "output_tokens": output, "total_tokens": audio_tokens + prompt_tokens + output}
    return "application/json", {"text": text, "usage": usage}


# --- the fake interface (interface.py): how tests reach this fake ---------------------------------

multipart = True
"""A multipart form, not JSON (interface.py): the server reads it with `parse_form`."""


def route(address: Address) -> Any:
    """Any OpenAI-compatible label hosts Whisper-style transcription; this module is the WireFake."""
    return sys.modules[__name__] if address.route == "v1/audio/transcriptions" else None


SETUPS = (Setup("whisperwire", "whisperwire/v1", "whisper-1", "sk-whisperwire-0105"),)
