"""The README's catalog and saved-keys examples are what Momor loads: a reader who copies them gets a
catalog the loader takes and a keys file `infra.local --keys` takes (every field name checked by the
same code that reads a deployment's), with their Azure resource and Bedrock region applied."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from momor.catalog import parse_catalog
from momor.store import keys

README = Path(__file__).resolve().parents[2] / "README.md"


def json_blocks() -> list[object]:
    text = README.read_text()
    section = text[text.index("## Your own catalog and keys"):text.index("## Observability")]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]


def test_the_readme_catalog_loads_and_its_keys_file_is_taken():
    catalog, saved = json_blocks()
    loaded = parse_catalog(catalog)
    assert {m.name for m in loaded.models} == {"gpt-4.1-mini", "claude-sonnet-4-5"}
    keys.check_saved_keys("README", json.dumps(saved))  # raises naming the field if one is wrong
    pools = keys._parse_secret("README", json.dumps(saved))
    # every saved-keys entry names a provider of the catalog beside it
    assert set(pools) <= {p.name for p in loaded.providers}
    assert [k.label for k in pools["bedrock"].keys] == ["virginia", "oregon"]


def test_a_wrong_field_in_the_readme_keys_would_be_refused():
    _, saved = json_blocks()
    saved["bedrock"][1]["region"] = "oregon"  # not a region: the loader's check is real
    with pytest.raises(keys.KeysError, match=r"key 2 \(oregon\): region must be"):
        keys.check_saved_keys("README", json.dumps(saved))
