"""The Assembler's kept text: exact whatever its length, and kept as a few joined pieces, not one
string per token (issue 14: memory under a 100,000-token stream grows by the text alone)."""

from __future__ import annotations

from momor.events import Assembler, Delta, PartStart


def test_a_long_text_is_kept_exactly_in_a_few_pieces():
    assembler = Assembler(keep_raw=False)
    assembler.add(PartStart(0, "content"))
    words = [f"w{n} " for n in range(10_000)]
    for word in words:
        assembler.add(Delta(0, word))
    assert assembler.messages()[0].value == "".join(words)
    assert len(assembler.parts[0].chunks) < 300  # not 10,000 strings


def test_a_short_text_is_kept_as_it_came():
    assembler = Assembler(keep_raw=False)
    assembler.add(PartStart(0, "content"))
    for word in ("a", "b", "c"):
        assembler.add(Delta(0, word))
    assert assembler.parts[0].chunks == ["a", "b", "c"] and assembler.messages()[0].value == "abc"
