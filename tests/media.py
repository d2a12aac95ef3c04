"""Test media made on the spot, never downloaded: a tiny WAV and a PDF holding known text."""

from __future__ import annotations

import io
import math
import struct
import wave


def tiny_wav(seconds: float = 0.5, rate: int = 8000) -> bytes:
    """A mono 16-bit WAV of a 440 Hz tone."""
    frames = int(seconds * rate)
    samples = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(frames))
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples)
    return out.getvalue()


def pdf_with_text(*lines: str) -> bytes:
    """A one-page PDF whose text layer holds `lines` (fpdf2, core Helvetica font)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for line in lines:
        pdf.cell(0, 10, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())
