"""Issue 40: the generated references (docs/reference/) say what the code says, and the check
that guards them changes nothing."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from infra import docs_reference
from momor.config import Config


def _digests() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(docs_reference.REFERENCE.iterdir())}


def test_every_generated_page_matches_the_code_and_the_check_changes_nothing():
    before = _digests()
    assert docs_reference.main(["--check"]) == 0, "run: python -m infra.docs_reference"
    assert _digests() == before


def test_the_check_sees_a_page_that_drifted(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(docs_reference, "REFERENCE", tmp_path)
    assert docs_reference.main([]) == 0 and docs_reference.stale() == []
    page = tmp_path / "settings.md"
    page.write_text(page.read_text().replace("MOMOR_RETRIES", "MOMOR_RETRIEZ"))
    assert docs_reference.stale() == [page]
    assert docs_reference.main(["--check"]) == 1
    (tmp_path / "openapi.json").unlink()
    assert set(docs_reference.stale()) == {page, tmp_path / "openapi.json"}


def test_every_setting_is_on_the_settings_page_with_its_default_and_meaning():
    page = (docs_reference.REFERENCE / "settings.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in page.splitlines() if line.startswith("| `MOMOR_")}
    envs = [f.metadata["env"] for f in dataclasses.fields(Config) if f.metadata.get("env")]
    assert sorted(rows) == sorted(envs)
    undocumented = [env for env, row in rows.items() if row.rstrip().endswith("&nbsp; |")]
    assert not undocumented, f"settings with no docstring in config.py: {undocumented}"
    assert "| `MOMOR_RETRY_BASE_MS` | `250` |" in page  # kept in seconds, documented in its own unit


def test_the_openapi_document_is_3_1_and_names_every_native_route():
    document = json.loads((docs_reference.REFERENCE / "openapi.json").read_text())
    assert document["openapi"] == "3.1.0"
    assert set(document["paths"]) == {"/models", "/models/decision", "/models/transcribe", "/models/embed",
                                      "/models/rerank"}
    body = document["components"]["schemas"]["NativeBody"]
    assert {"systemPrompt", "messages", "models", "streaming"} <= set(body["properties"])
    decision = document["components"]["schemas"]["DecisionBody"]
    assert "options" in decision["required"] and "tools" not in decision["properties"]
    # Every reference resolves inside the document.
    text = json.dumps(document)
    names = {ref.rsplit("/", 1)[1] for ref in _refs(document)}
    assert names <= set(document["components"]["schemas"]), text[:0]


def _refs(node):
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_the_local_server_serves_the_same_openapi_document():
    from starlette.testclient import TestClient

    from infra.local import with_openapi
    from momor.app import all_routes

    with TestClient(with_openapi(all_routes())) as client:
        served = client.get("/openapi.json")
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    assert served.json() == json.loads((docs_reference.REFERENCE / "openapi.json").read_text())
