"""Issue 23: one wire registry (providers/registry.py), owned by the wires. Each registered wire's
module agrees with its line, and everything that lists wires (the catalog, its schema, the README,
conversion, transcription, the conformance suite) is derived from it or checked against it."""

from __future__ import annotations

import json
import re
from importlib import import_module
from pathlib import Path

import jsonschema
import pytest

from momor import catalog
from momor.providers import registry, wire_for
from momor.providers.registry import CATALOG_WIRES, REGISTRY
from momor.routing.conversion import URL_MEDIA
from momor.routing.transcribe import TRANSCRIPTION_WIRES
from tests.docs_text import section as docs_section
from tests.fakes.interface import MatrixEntry, fake_module
from tests.unit.test_vector_conformance import EMBED_CASES, RERANK_CASES
from tests.unit.test_wire_conformance import CASES, TRANSCRIPTION_CASES

ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = ROOT / "shared" / "momor" / "providers"
NAMES = [facts.name for facts in REGISTRY]


@pytest.mark.parametrize("facts", REGISTRY, ids=NAMES)
def test_each_module_exposes_the_wire_its_line_names(facts):
    wire = wire_for(facts.name)
    assert wire is import_module(facts.module).WIRE
    assert wire.name == facts.name
    assert hasattr(wire, "count_request") == facts.counts_tokens, "counts_tokens disagrees with the module"


def _option_names(path: Path) -> set[str]:
    """Option names a module reads: `options.get("x")`, `options["x"]`, `_option_str(options, "x", ...)`
    or vertex's `_setting(target, "x")` (the key's value, else the option)."""
    text = path.read_text()
    return set(re.findall(r'(?:\boptions(?:\.get\(|\[|, )|_setting\(target, )"(\w+)"', text))


def _sources(module: str, seen: set[str] | None = None) -> set[str]:
    """The provider modules `module` is made of: itself and the sibling modules it imports."""
    seen = set() if seen is None else seen
    name = module.rsplit(".", 1)[-1]
    if name in seen or not (PROVIDERS / f"{name}.py").exists():
        return seen
    seen.add(name)
    for sibling in re.findall(r"^from \.(\w+) import", (PROVIDERS / f"{name}.py").read_text(), re.M):
        _sources(sibling, seen)
    return seen


@pytest.mark.parametrize("facts", REGISTRY, ids=NAMES)
def test_each_option_a_wire_declares_is_read_by_its_modules(facts):
    read = set().union(*(_option_names(PROVIDERS / f"{name}.py") for name in _sources(facts.module)))
    assert set(facts.options) <= read, "providers/registry.py declares an option the wire never reads"


def test_every_option_a_wire_module_reads_is_declared():
    """An option read anywhere in providers/ is declared by a wire (a new one must be registered too)."""
    read = set().union(*(_option_names(path) for path in PROVIDERS.glob("*.py")))
    assert read == {option for facts in REGISTRY for option in facts.options}


def test_catalog_wires_and_the_schema_enum_are_the_registrys():
    assert catalog.WIRES == CATALOG_WIRES == tuple(f.name for f in REGISTRY if f.in_catalog)
    committed = json.loads(catalog.SCHEMA_PATH.read_text())
    assert committed["$defs"]["Provider"]["properties"]["wire"]["enum"] == list(CATALOG_WIRES)
    provider = {"name": "p", "wire": "openai_chat", "baseUrl": "https://example.test"}
    jsonschema.validate(provider, committed["$defs"]["Provider"])
    with pytest.raises(jsonschema.ValidationError, match="is not one of"):
        jsonschema.validate({**provider, "wire": "carrier_pigeon"}, committed["$defs"]["Provider"])


def test_every_catalog_wire_is_in_the_readmes_catalog_documentation():
    section = docs_section("The catalog")
    bullet = re.search(r"- `providers\[\]`:.*?`wire` \((.*?)\)", section, re.S)
    assert bullet, "README's catalog section lost its providers[] wire list"
    assert set(re.findall(r"`(\w+)`", bullet.group(1))) == set(CATALOG_WIRES)


def test_every_registered_wire_is_in_the_conformance_suites_parameters():
    """Each with every setup its fake declares (tests/fakes/<wire>.py `SETUPS`), none left out: a
    catalog wire under the chat cases, a wire transcription goes over under the transcription ones, an
    embedding or rerank wire under the vector suite's (tests/unit/test_vector_conformance.py)."""
    under_test = [case.values[0] for case in [*CASES, *TRANSCRIPTION_CASES, *EMBED_CASES, *RERANK_CASES]]
    assert {facts.name for facts, _ in under_test} == set(NAMES)
    assert {facts.name for facts, _ in (case.values[0] for case in CASES)} == set(CATALOG_WIRES)
    for facts in REGISTRY:
        setups = [setup for wire, setup in under_test if wire is facts]
        assert setups == list(import_module(f"tests.fakes.{facts.name}").SETUPS)


def test_routing_tables_are_derived_from_the_registry():
    assert {f.name: f.url_media for f in REGISTRY} == URL_MEDIA
    assert {f.name: f.transcribes_over for f in REGISTRY if f.transcribes_over} == TRANSCRIPTION_WIRES
    for target in TRANSCRIPTION_WIRES.values():
        assert hasattr(wire_for(target), "build_request")
    for facts in REGISTRY:  # what a catalog wire embeds and reranks over is a registered wire of that kind
        if facts.embeds_over:
            assert hasattr(wire_for(facts.embeds_over), "build_embed") and facts.in_catalog
            assert registry.facts(facts.embeds_over).batch
        if facts.reranks_over:
            assert hasattr(wire_for(facts.reranks_over), "build_rerank") and facts.in_catalog


@pytest.mark.parametrize("facts", [f for f in REGISTRY if f.in_catalog], ids=list(CATALOG_WIRES))
def test_every_catalog_wire_declares_its_wire_matrix_cases_in_its_fake(facts):
    """The wire matrix (tests/integration/test_wire_matrix.py) reads its cases from the fakes, so a
    catalog wire whose fake declares none would silently be left out of it."""
    fake = fake_module(facts.name)
    entries = getattr(fake, "MATRIX", ())
    assert entries, (f"tests/fakes/{facts.name}.py declares no wire matrix case: add "
                     f"MATRIX = (MatrixEntry(provider, path, offering, key, ...),) (tests/fakes/interface.py)")
    assert all(isinstance(entry, MatrixEntry) for entry in entries)
    if len(entries) > 1:
        assert all(entry.name for entry in entries), "several MatrixEntry of one fake need each its own `name`"


def test_the_wire_matrix_case_ids_are_unique():
    ids = [entry.name or facts.name for facts in REGISTRY if facts.in_catalog
           for entry in getattr(fake_module(facts.name), "MATRIX", ())]
    assert len(ids) == len(set(ids)), ids
