"""The guardrails policy object: validated with a 400 naming the field, stored as its JSON and read
back the same, an organization's checks the floor a key's are added to."""

from __future__ import annotations

import json

import pytest

from momor.errors import RequestError
from momor.guardrails.policy import from_text, merged, parse


@pytest.mark.parametrize(("value", "param"), [
    ([], "guardrails"),
    ({"inputs": []}, "guardrails.inputs"),
    ({"input": {}}, "guardrails.input"),
    ({"input": [{"check": "pii"}]}, "guardrails.input[0].action"),
    ({"input": [{"check": "virus", "action": "block"}]}, "guardrails.input[0].check"),
    ({"input": [{"check": "moderation", "action": "block"}]}, "guardrails.input[0].check"),  # no provider set
    ({"input": [{"check": "moderation", "action": "mask"}]}, "guardrails.input[0].action"),
    ({"input": [{"check": "moderation", "action": "log", "categories": ["rudeness"]}]},
     "guardrails.input[0].categories"),
    ({"input": [{"check": "pii", "action": "log", "categories": ["hate"]}]}, "guardrails.input[0].categories"),
    ({"input": [{"check": "pii", "action": "mask", "entities": ["dna"]}]}, "guardrails.input[0].entities"),
    ({"input": [{"check": "pii", "action": "mask", "entities": []}]}, "guardrails.input[0].entities"),
    ({"input": [{"check": "pii", "action": "block", "restore": True}]}, "guardrails.input[0].restore"),
    ({"output": [{"check": "pii", "action": "mask", "restore": True}]}, "guardrails.output[0].restore"),
    ({"input": [{"check": "regex", "action": "log"}]}, "guardrails.input[0].patterns"),
    ({"input": [{"check": "regex", "action": "log", "patterns": ["(unclosed"]}]}, "guardrails.input[0].patterns"),
    ({"input": [{"check": "denylist", "action": "log", "words": [" "]}]}, "guardrails.input[0].words"),
    ({"input": [{"check": "denylist", "action": "log", "words": ["a"], "patterns": ["b"]}]},
     "guardrails.input[0].patterns"),
    ({"input": [{"check": "pii", "action": "log", "failure": "maybe"}]}, "guardrails.input[0].failure"),
    ({"input": [{"check": "pii", "action": "log", "name": "has space"}]}, "guardrails.input[0].name"),
    ({"input": [{"check": "pii", "action": "log", "colour": "red"}]}, "guardrails.input[0].colour"),
    ({"input": [{"check": "pii", "action": "log"}] * 21}, "guardrails.input"),
    ({"unscreenedFiles": "sometimes"}, "guardrails.unscreenedFiles"),
])
def test_a_bad_policy_is_a_400_naming_the_field(value, param):
    with pytest.raises(RequestError) as refused:
        parse(value, origin="key")
    assert refused.value.status == 400 and refused.value.param == param
    assert refused.value.detail.startswith(param)


def test_a_moderation_check_needs_the_deployments_moderation_provider(monkeypatch):
    from momor.config import reset_config

    monkeypatch.setenv("MOMOR_GUARDRAIL_MODERATION_PROVIDER", "openai")
    reset_config()
    policy = parse({"output": [{"check": "moderation", "action": "block", "categories": ["violence", "hate"]}]},
                   origin="key")
    assert policy.output[0].to_json() == {"name": "moderation", "check": "moderation", "action": "block",
                                          "categories": ["hate", "violence"], "failure": "closed"}
    monkeypatch.delenv("MOMOR_GUARDRAIL_MODERATION_PROVIDER")
    reset_config()
    with pytest.raises(RequestError, match="MOMOR_GUARDRAIL_MODERATION_PROVIDER"):
        parse(policy.to_json(), origin="key")
    assert from_text(json.dumps(policy.to_json()), origin="key") == policy  # stored: refused when a call runs it


def test_a_policy_reads_back_as_stored_with_defaults_written_out():
    policy = parse({"input": [{"check": "pii", "action": "mask", "restore": True, "entities": ["card", "email"]},
                              {"check": "regex", "action": "block", "patterns": ["x"]},
                              {"check": "regex", "action": "log", "patterns": ["y"]}],
                    "output": [{"check": "denylist", "action": "block", "words": ["w"], "failure": "open"}]},
                   origin="organization")
    stored = policy.to_json()
    assert [c["name"] for c in stored["input"]] == ["pii", "regex", "regex-2"]  # one name, one check
    assert stored["input"][0]["entities"] == ["email", "card"]  # in the detectors' own order
    assert parse(stored, origin="organization").to_json() == stored
    assert parse(None, origin="key").to_json() == {"input": [], "output": []}


def test_the_organization_is_the_floor_a_key_adds_to():
    org = parse({"input": [{"check": "pii", "action": "block"}]}, origin="organization")
    key = parse({"input": [{"check": "denylist", "action": "mask", "words": ["x"]}],
                 "output": [{"check": "pii", "action": "log"}]}, origin="key")
    both = merged(org, key)
    assert [(c.origin, c.check) for c in both.input] == [("organization", "pii"), ("key", "denylist")]
    assert [(c.origin, c.check) for c in both.output] == [("key", "pii")]
    assert merged(org, parse({}, origin="key")) is org  # a key with nothing of its own removes nothing


def test_unscreened_files_are_allowed_only_where_each_policy_whose_checks_they_escape_allows_them():
    masks = {"input": [{"check": "pii", "action": "mask"}]}
    logs = {"input": [{"check": "pii", "action": "log"}]}
    org, key = parse(masks, origin="organization"), parse({**masks, "unscreenedFiles": "allow"}, origin="key")
    assert org.screens_files and not key.screens_files
    assert key.to_json()["unscreenedFiles"] == "allow" and "unscreenedFiles" not in org.to_json()
    assert merged(org, key).screens_files  # the organization's masks: a key cannot let files past them
    assert not merged(parse(logs, origin="organization"), key).screens_files  # log checks never refuse a file
    assert not parse(logs, origin="key").screens_files
