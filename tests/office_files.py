"""Office documents made on the spot with the libraries that read them (python-docx, openpyxl,
python-pptx), each holding known text."""

from __future__ import annotations

import io

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


def docx_bytes() -> bytes:
    from docx import Document

    document = Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Revenue grew by 12 percent.")
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("Region", "Sales"), ("North", "40")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("Costs stayed flat.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_bytes() -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Sales"
    for row in [("Region", "Units"), ("North", 12), ("South", 30)]:
        sheet.append(row)
    workbook.create_sheet("Costs").append(("Rent", 1500))
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def pptx_bytes() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Roadmap"
    slide.placeholders[1].text = "Ship the router in March."
    slide.notes_slide.notes_text_frame.text = "Mention the budget."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Thanks"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def sparse_xlsx(last_cell: str) -> bytes:
    """A workbook of two cells, A1 and `last_cell`: tiny, but its sheet's range is every cell between."""
    from openpyxl import Workbook

    workbook = Workbook()
    workbook.active["A1"] = "first"
    workbook.active[last_cell] = "last"
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()
