"""The limits every local file conversion runs under (processors.py, office.py), and how it is run.

A caller's file is hostile input to a parser: a 30 KB PDF can inflate to gigabytes, or hold a
content stream whose parsing alone takes minutes; an office file is a zip that can inflate the same
way. So each conversion:

- runs OFF the event loop, on a small pool of its own (a runaway parse must not hold the worker
  threads that address lookups and other blocking calls share);
- has a time limit, CONVERT_SECONDS from when it is asked for (waiting for a worker counts). A
  thread cannot be stopped from outside, so the extraction loop itself checks the deadline between
  pages, slides and rows (and pypdf's text extraction between drawing operators, through its
  visitor hook); the caller's wait is also bounded on the event loop side, a little later;
- may produce at most MAX_TEXT_CHARS characters: a file with more text is refused with 413, not
  truncated, so a model never answers about half a document as if it were the whole;
- has limits on the work its format allows (pages, slides, rows, cells, inflated bytes);
- turns whatever the parsing library raises into a 4xx naming the file: 413 for what is too big
  (a limit above, a decompression bomb), 400 for what cannot be read.
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
import zipfile
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..errors import RequestError
from ..logs import logger

CONVERT_SECONDS = 10.0
"""The time one file's conversion may take."""
GRACE_SECONDS = 1.0
"""How much longer the caller waits for the converter to notice its own deadline (its answer names
the limit it hit) before being answered without it."""
MAX_TEXT_CHARS = 1_000_000
"""Characters one file may turn into: about 250,000 tokens, more than most models read at once."""
MAX_PDF_PAGES = 500
MAX_SLIDES = 500
MAX_SHEET_ROWS = 100_000
"""Rows read over a whole workbook, empty ones inside the sheet's range included."""
MAX_SHEET_CELLS = 500_000
"""Cells read over a whole workbook, empty ones included: a sparse sheet is still work."""
MAX_UNZIPPED_BYTES = 64 * 1024 * 1024
"""What an office file (a zip) may inflate to: its members' declared sizes, and what they really
inflate to (office.honest_zip)."""
MAX_ZIP_MEMBERS = 10_000
PDF_STREAM_BYTES = 25_000_000
"""What one PDF stream may inflate to (pypdf's default is 75 MB)."""
PDF_STREAM_TOKENS = 500_000
"""Tokens pypdf may parse in one content stream (its default, 2,000,000, took 15 s on one page)."""
WORKERS = 2

UNREADABLE: tuple[type[BaseException], ...] = (
    ValueError, KeyError, TypeError, AssertionError, IndexError, AttributeError, LookupError, OverflowError,
    NotImplementedError, EOFError, OSError, zlib.error, struct.error, zipfile.BadZipFile, UnicodeError,
    SyntaxError,  # XML parsers' errors (lxml's XMLSyntaxError, ElementTree's ParseError) are SyntaxErrors
)
"""What parsing libraries raise on corrupt input besides their own errors (pypdf leaks all of these).
Anything else is refused all the same, and logged, so a new failure mode is seen."""


class Refused(Exception):
    """A file a converter will not turn into text: the reason completes "'name.pdf' ..."."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class Budget:
    """The time and text one conversion has left, checked by the converter itself."""

    def __init__(self, seconds: float = CONVERT_SECONDS) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.chars = 0

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise Refused(413, f"took longer than {self.seconds:g} s to convert; it is too large or complex")

    def text(self, piece: str) -> str:
        """`piece`, counted against MAX_TEXT_CHARS."""
        self.chars += len(piece)
        if self.chars > MAX_TEXT_CHARS:
            raise Refused(413, f"holds more than {MAX_TEXT_CHARS:,} characters of text, more than Momor converts")
        self.check()
        return piece


Extractor = Callable[[bytes, Budget], str]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:  # made at the first conversion: most processes never convert
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="momor-convert")
        return _pool


def guarded(extract: Extractor, data: bytes, budget: Budget) -> str:
    """`extract(data, budget)`, anything it raises turned into Refused."""
    budget.check()  # a conversion that waited past its deadline for a worker does not start
    try:
        return extract(data, budget)
    except Refused:
        raise
    except MemoryError:
        raise Refused(413, "needs more memory to convert than Momor has") from None
    except RecursionError:
        raise Refused(400, "is nested too deeply to be read") from None
    except UNREADABLE as exc:
        raise Refused(400, f"could not be read ({type(exc).__name__})") from None
    except Exception as exc:
        logger.warning("file conversion failed unexpectedly", extra={"error": type(exc).__name__})
        raise Refused(400, f"could not be read ({type(exc).__name__})") from None


async def run(extract: Extractor, data: bytes, where: str, name: str, seconds: float | None = None) -> str:
    """The text `extract` makes of one file, off the event loop and within the limits above;
    RequestError naming `where` and the file when it refuses or fails."""
    seconds = CONVERT_SECONDS if seconds is None else seconds
    budget = Budget(seconds)
    try:
        async with asyncio.timeout(seconds + GRACE_SECONDS):
            return await asyncio.get_running_loop().run_in_executor(_executor(), guarded, extract, data, budget)
    except TimeoutError:
        raise RequestError(f"{where}: {name!r} took longer than {seconds:g} s to convert; it is too large or "
                           "complex.", status=413, param=where) from None
    except Refused as refused:
        raise RequestError(f"{where}: {name!r} {refused.reason}.", status=refused.status, param=where) from None
