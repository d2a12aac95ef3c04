"""Hostile and broken files made on the spot for the file-processing guards (issue 20): PDFs built
by hand, byte by byte, so each holds exactly the trap it is named for."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib


def pdf(content: bytes, *, pages: int = 1, forms: dict[bytes, bytes] | None = None) -> bytes:
    """A PDF of `pages` pages sharing one FlateDecode content stream `content`, with Helvetica as
    /F1 and each of `forms` (name -> its content) as a form XObject the page can `Do`."""
    forms = forms or {}
    font = 4 + pages
    first_form = font + 1
    xobjects = " ".join(f"/{name.decode()} {first_form + i} 0 R" for i, name in enumerate(forms))
    resources = f"<< /Font << /F1 {font} 0 R >> /XObject << {xobjects} >> >>".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{4 + i} 0 R' for i in range(pages))}] /Count {pages} >>".encode(),
        _stream(content),
        *[b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources " + resources + b" >>"
          for _ in range(pages)],
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *[_stream(body, f"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 {font} 0 R "
                        ">> >> ".encode()) for body in forms.values()],
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def _stream(content: bytes, extra: bytes = b"") -> bytes:
    packed = zlib.compress(content, 9)
    return b"<< %s/Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (extra, len(packed), packed)


def text_pdf(text: str, pages: int = 1) -> bytes:
    return pdf(b"BT /F1 12 Tf 72 720 Td (" + text.encode() + b") Tj ET", pages=pages)


def zlib_bomb_pdf(inflated: int = 200_000_000) -> bytes:
    """A PDF of about 200 KB whose one content stream inflates to `inflated` bytes of blanks."""
    return pdf(b" " * inflated)


def slow_form_pdf() -> bytes:
    """A 2 KB PDF whose page draws one form of 100,000 text operators 5,000 times: cheap to parse,
    minutes to extract (each `Do` runs the whole form again)."""
    return pdf(b"/X0 Do " * 5000, forms={b"X0": b"BT /F1 12 Tf " + b"(a) Tj " * 100_000 + b"ET"})


def zip_bomb(name: str, inflated: int) -> bytes:
    """A zip whose one member `name` inflates to `inflated` zero bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, b"\0" * inflated)
    return out.getvalue()


def lying_zip(name: str, inflated: int, declared: int, *, matching_crc: bool = False,
              others: dict[str, bytes] | None = None) -> bytes:
    """A zip of `others` and, last, a member `name` that inflates to `inflated` zero bytes but declares
    `declared`; with `matching_crc`, its CRC is that of the first `declared` bytes, so a reader that
    stops at the declared size finds nothing wrong."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for other, body in (others or {}).items():
            archive.writestr(other, body)
        with archive.open(name, "w") as member:
            for _ in range(inflated // 1_000_000):
                member.write(b"\0" * 1_000_000)
        local = archive.getinfo(name).header_offset
    data = bytearray(out.getvalue())
    central = data.rfind(b"PK\x01\x02")  # the last member's entry in the central directory
    for header, size_at, crc_at in ((local, 22, 14), (central, 24, 16)):
        struct.pack_into("<I", data, header + size_at, declared)
        if matching_crc:
            struct.pack_into("<I", data, header + crc_at, zlib.crc32(b"\0" * declared))
    return bytes(data)
