"""The template's translation is pinned: what CloudFormation makes of template.yaml (sam package with
placeholder code, AWS::LanguageExtensions as SAM CLI expands it, then SAM's translator; see
sam_translate.py) equals the committed snapshot, resource for resource. A rewrite of the template's
shape (issue 40: one definition per function shape, Fn::ForEach with per-function data) must leave it
unchanged; a deliberate change of the deployment updates the snapshot in the same commit, so the diff
names it.
The rewrite (issue 40) changed it in three places, each intended: a Mappings section (the loop's data,
and SAMCodeUriStreamingFunctions, each function's uploaded code as `sam package` writes it for a loop);
RouterMemory and StoredResponses moved from the ChatCompletions and Responses roles' inline policy to
an AWS::IAM::Policy each on the same role (<Name>FunctionOwnTablePolicy: the same statement; inside
the loop it would need an Fn::If per function, whose condition name CloudFormation's Fn::ForEach does
not substitute). Every function, version, alias, permission and integration is as it was.
Regenerate with:
    .sam-venv/bin/python tests/lambda/sam_translate.py template.yaml | .venv/bin/python -c \
      "import json,sys; json.dump(json.load(sys.stdin), open(sys.argv[1], 'w'), indent=1, sort_keys=True)" \
      tests/lambda/snapshots/template_translation.json
"""

import copy
import json
from pathlib import Path

import pytest

from . import rie
from .test_template import FOLDERS, FUNCTIONS, STREAMING, translated

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


def test_the_streaming_functions_are_one_definition():
    """Issue 40: every streaming function is written by one Fn::ForEach, its differences in
    Mappings.StreamingFunctions; none is written out beside it (a copy would drift from the others)."""
    written = rie.load_template_as_written()
    identifier, names, body = written["Resources"]["Fn::ForEach::StreamingFunctions"]
    assert list(body) == [f"${{{identifier}}}Function"]
    assert sorted(f"{name}Function" for name in names) == sorted(STREAMING)
    assert sorted(written["Mappings"]["StreamingFunctions"]) == sorted(names), "one entry per function, no other"
    by_hand = [k for k, v in written["Resources"].items()
               if isinstance(v, dict) and "AutoPublishAlias" in v.get("Properties", {})]
    assert not by_hand, f"{by_hand} written out beside the loop"
    for name in names:  # each reads its own folder, service name and description
        data = written["Mappings"]["StreamingFunctions"][name]
        assert data["CodeUri"].rstrip("/") == f"functions/{FOLDERS[f'{name}Function']}"
        assert data["Service"].startswith("momor-") and data["Description"]


def _comparable(resource: dict) -> dict:
    """A resource without what only packaging or the transform's own functions change."""
    found = copy.deepcopy(resource)
    properties = found.get("Properties", {})
    properties.pop("CodeUri", None)
    properties.get("Environment", {}).get("Variables", {}).pop("STACK_PARAMETERS", None)
    return found


@pytest.mark.sam
@pytest.mark.timeout(300)
def test_the_static_checks_read_the_loops_as_sam_cli_writes_them_out():
    """The static checks (test_template.py, infra/bench/cost.py) read the loops through
    infra/template_loops.py: each resource a loop writes must be what SAM CLI's own port of the
    transform writes (only the transform's functions resolved), or a check would pass on a function
    CloudFormation never makes."""
    written = rie.load_template_as_written()["Resources"]
    expanded = rie.load_template()["Resources"]
    port = translated(only_its_own=True, before_sam=True)["Resources"]
    from_loops = sorted(set(expanded) - set(written))
    assert len(from_loops) >= len(STREAMING) + len(FUNCTIONS), from_loops  # the functions and their log groups
    assert sorted(port) == sorted(expanded)
    for logical_id in from_loops:
        assert _comparable(expanded[logical_id]) == _comparable(port[logical_id]), logical_id
