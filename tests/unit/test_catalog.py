"""The catalog contract: the committed JSON Schema is the model's, the examples validate, and a bad
catalog is refused with the field named."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from momor.catalog import SCHEMA_PATH, CatalogError, json_schema, load_catalog_file, parse_catalog

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [ROOT / "infra" / "example-catalog.json", ROOT / "infra" / "example-catalog.real.json"]


def test_the_committed_schema_is_the_models():
    assert json.loads(SCHEMA_PATH.read_text()) == json_schema(), (
        "catalog.schema.json is stale: run `python -m momor.catalog --schema`")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_validate_against_model_and_schema(path):
    catalog = load_catalog_file(path)
    assert catalog.models and catalog.providers
    jsonschema.validate(json.loads(path.read_text()), json_schema())


def _base():
    return json.loads(EXAMPLES[0].read_text())


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda c: c["providers"][0].update(wire="grpc"), "providers.0"),
        (lambda c: c["providers"][0].update(baseUrl="ftp://x"), "providers.0.baseUrl"),
        (lambda c: c["models"][0]["offerings"][0].update(provider="nowhere"), "offerings[0].provider"),
        (lambda c: c["models"][0]["offerings"][0]["prices"].update(input=-1), "prices.input"),
        (lambda c: c["models"][1].update(tier="ultra"), "models.1.tier"),
        (lambda c: c["models"].append(c["models"][0]), "model names must be unique"),
        (lambda c: c["models"][0].update(surprise=1), "models.0.surprise"),
    ],
)
def test_a_bad_catalog_names_the_field(change, named):
    doc = _base()
    change(doc)
    with pytest.raises(CatalogError) as info:
        parse_catalog(doc)
    assert named in info.value.detail
