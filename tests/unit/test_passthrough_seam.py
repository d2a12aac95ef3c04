"""The passthrough seam (issue 23): whether an attempt goes in the caller's own words is decided in
one function, routing/passthrough.py's `way_for`; doors read the answer's decision; no dialect
imports a provider module; the canonical `Call` carries no caller body.

The structural rules are checked on the source itself (its syntax tree), so a new module that
breaks one fails here, naming the file and line."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from momor.call import Call
from momor.caller_body import CallerBody
from momor.events import Raw
from momor.providers import wire_for
from momor.providers.base import SSEEvent
from momor.routing.passthrough import way_for

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "momor"
SEAM = PACKAGE / "routing" / "passthrough.py"
DECIDING = {"speaks", "sends_body_of"}
"""The same-protocol checks (providers/__init__.py): only the seam may call them."""


def modules(under: Path) -> list[Path]:
    return sorted(under.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports, absolute (relative imports resolved), with its line."""
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from momor import providers` imports the package as a name: count each name as a module.
            found += [(node.lineno, base)] + [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def calls_to(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """Calls in `path` to a function named in `names` (plain or as an attribute)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in names:
                out.append((node.lineno, name))
    return out


def test_no_dialect_imports_a_provider_module():
    dialects = modules(PACKAGE / "dialects")
    assert dialects  # the scan sees the dialects
    offending = [f"{p.relative_to(PACKAGE)}:{line} imports {name}"
                 for p in dialects for line, name in imported(p)
                 if name == "momor.providers" or name.startswith("momor.providers.")]
    assert offending == []


def test_the_import_scan_resolves_relative_imports():
    """The scan above would miss nothing a dialect could write: relative, absolute, package-as-name."""
    door = PACKAGE / "dialects" / "openai" / "route.py"
    names = {name for _, name in imported(door)}
    assert "momor.api.flow" in names and "momor.dialects.openai.parse" in names


def test_the_passthrough_decision_is_made_in_one_function():
    callers = {f"{p.relative_to(PACKAGE)}:{line} calls {name}"
               for p in modules(PACKAGE) for line, name in calls_to(p, DECIDING) if p != SEAM}
    assert callers == set()
    # ... and in the seam, only inside `way_for`.
    tree = ast.parse(SEAM.read_text())
    deciders = {fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
                and any(isinstance(n, ast.Call) and getattr(n.func, "id", None) in DECIDING for n in ast.walk(fn))}
    assert deciders == {"way_for"}


def test_raw_events_are_made_only_by_the_seam():
    """The transport no longer wraps anything: it hands frames to the `Words` the seam chose."""
    makers = {str(p.relative_to(PACKAGE)) for p in modules(PACKAGE) if calls_to(p, {"Raw"})}
    assert makers == {"routing/passthrough.py"}


def test_the_canonical_call_carries_no_caller_body():
    assert not {"raw", "raw_wire", "betas"} & {f.name for f in dataclasses.fields(Call)}


@pytest.mark.parametrize(("provider_wire", "body_wire", "wire", "sent", "own_words"), [
    ("openai_chat", "openai_chat", "openai_chat", True, True),
    # An OpenAI offering answers the OpenAI dialect on Chat Completions (seed 001).
    ("openai_responses", "openai_chat", "openai_chat", True, True),
    ("anthropic", "anthropic", "anthropic", True, True),
    ("anthropic", "openai_chat", "anthropic", False, False),
    ("openai_chat", "anthropic", "openai_chat", False, False),
    ("gemini", "openai_chat", "gemini", False, False),
    # Vertex's Claude is sent the Anthropic body as written, and answers through Vertex (translated).
    ("vertex", "anthropic", "vertex", True, False),
    ("vertex", "openai_chat", "vertex", False, False),
])
def test_way_for(provider_wire, body_wire, wire, sent, own_words):
    body = {"messages": []}
    way = way_for(provider_wire, CallerBody(body, body_wire))
    assert way.wire is wire_for(wire)
    assert (way.body is body) is sent and (way.body is None) is not sent
    assert way.passthrough is own_words


def test_without_a_caller_body_every_attempt_is_translated():
    way = way_for("openai_chat", None)  # a native call, or a rollover's prefill
    assert way.wire is wire_for("openai_chat") and way.body is None and not way.passthrough


class _Decoder:
    parsed = {"p": 1}

    def feed(self, item):
        return [("decoded", item.data)]


def test_own_words_wrap_each_frame_and_a_whole_body_translated_words_do_not():
    item = SSEEvent("message_start", '{"a":1}')
    passthrough, translated = way_for("anthropic", CallerBody({}, "anthropic")), way_for("anthropic", None)
    (raw,) = passthrough.words.frame(_Decoder(), item)
    assert isinstance(raw, Raw) and raw == Raw('{"a":1}', "message_start")
    assert raw.decoded == (("decoded", '{"a":1}'),) and raw.parsed == {"p": 1}
    assert list(passthrough.words.whole(b'{"b":2}')) == [Raw('{"b":2}')]
    assert list(translated.words.frame(_Decoder(), item)) == [("decoded", '{"a":1}')]
    assert list(translated.words.whole(b'{"b":2}')) == []


# --- the attempt loop asks once per attempt, and the answer carries the decision --------------------


class _Recording:
    """An exchange that records what each attempt was handed, then answers as `Script` does."""

    def __init__(self, script):
        self.script, self.handed = script, []

    def exchange(self, wire, call, target, *, stream, timeouts, words):
        self.handed.append((target.offering.provider, wire.name, target.passthrough_body, words))
        return self.script.exchange(wire, call, target, stream=stream, timeouts=timeouts, words=words)


@pytest.mark.parametrize(("a_fails", "served", "passthrough"), [(False, "a", True), (True, "b", False)])
async def test_the_answer_carries_the_serving_attempts_decision(a_fails, served, passthrough):
    from momor.routing.attempts import Session

    from .test_attempts import CATALOG, FAST, Script, drain, http
    from .test_attempts import session as plain_session

    body = {"messages": [{"role": "user", "content": "hello"}]}
    # `a` speaks Chat Completions (the caller's protocol), `b` Anthropic; `a` is tried first.
    script = Script(a=[http(401)]) if a_fails else Script()
    recording = _Recording(script)
    made = plain_session(script, order=("a",))
    s = Session(made.call, made.candidates, made.recorder, resolve_key=made.resolve_key, policy=FAST,
                breakers=made.breakers, exchange_fn=recording.exchange, caller_body=CallerBody(body, "openai_chat"))
    answer = await s.open()
    await drain(answer)
    assert answer.served.provider.name == served and answer.passthrough is passthrough
    # Each attempt is handed its own decision: `a` the caller's body in its own words, `b` neither.
    assert [(o, w) for o, w, _, _ in recording.handed] == [("a", "openai_chat"), *([("b", "anthropic")] * a_fails)]
    for offering, _, sent, words in recording.handed:
        own = offering == "a"
        assert (sent is body) is own and (sent is None) is not own
        assert words is way_for(CATALOG.provider(offering).wire, CallerBody(body, "openai_chat")).words
