"""The template's translation is pinned: what CloudFormation makes of template.yaml (sam package with
placeholder code, AWS::LanguageExtensions as SAM CLI expands it, then SAM's translator; see
sam_translate.py) equals the committed snapshot, resource for resource. A rewrite of the template's
shape (issue 40: one definition per function shape, Fn::ForEach with per-function data) must leave it
unchanged; a deliberate change of the deployment updates the snapshot in the same commit, so the diff
names it. Regenerate with:
    .sam-venv/bin/python tests/lambda/sam_translate.py template.yaml | .venv/bin/python -c \
      "import json,sys; json.dump(json.load(sys.stdin), open(sys.argv[1], 'w'), indent=1, sort_keys=True)" \
      tests/lambda/snapshots/template_translation.json
"""

import json
from pathlib import Path

import pytest

from .test_template import translated

SNAPSHOT = Path(__file__).parent / "snapshots" / "template_translation.json"


@pytest.mark.sam
@pytest.mark.timeout(600)
def test_the_translation_equals_the_committed_snapshot():
    expected = json.loads(SNAPSHOT.read_text())
    found = translated()
    assert sorted(found) == sorted(expected)
    assert sorted(found["Resources"]) == sorted(expected["Resources"]), "logical ids differ"
    changed = [logical_id for logical_id in expected["Resources"]
               if found["Resources"][logical_id] != expected["Resources"][logical_id]]
    assert not changed, f"resources differ from the snapshot: {changed}"
    for section in sorted(expected):
        assert found[section] == expected[section], section
