"""The `momor` command line (issue 38), run as the project installs it (the `momor` console script in
.venv/bin) in a subprocess, against the test server over HTTP and the test's own tables: keys made
with every governance flag, listed, changed, rotated and revoked; the first key bootstrapped with AWS
credentials; organizations made and changed; and the audit log showing each of those changes, with
no secret in it, nor on stderr, ever."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2

MOMOR = Path(sys.executable).with_name("momor")
"""The console script pyproject.toml's [project.scripts] installs beside this interpreter."""


def momor_cli(*argv: str, key: str | None = None, url: str | None = None,
              **env: str) -> subprocess.CompletedProcess[str]:
    """`momor ARGV...` with this test's AWS settings (tables, emulators) and, for the HTTP commands, the
    server's URL and an API key in MOMOR_URL / MOMOR_API_KEY."""
    environment = {**os.environ, **env}
    for name, value in (("MOMOR_URL", url), ("MOMOR_API_KEY", key)):
        environment.pop(name, None)
        if value is not None:
            environment[name] = value
    return subprocess.run([str(MOMOR), *argv], capture_output=True, text=True, env=environment, timeout=120)


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, (done.args, done.stdout, done.stderr)
    return done


def bootstrap(*extra: str, **env: str) -> str:
    done = ok(momor_cli("keys", "create", "operators", "--bootstrap", *extra, **env))
    secret = done.stdout.strip()
    assert secret.startswith("momor-") and "\n" not in secret
    assert secret not in done.stderr
    return secret


def api(momor: Any, key: str, method: str, path: str, body: Any = None) -> httpx2.Response:
    return httpx2.request(method, momor.url + path, json=body, headers={"Authorization": f"Bearer {key}"},
                          timeout=30)


def listed(momor: Any, key: str, key_id: str) -> dict[str, Any]:
    answer = api(momor, key, "GET", "/keys")
    assert answer.status_code == 200, answer.text
    return next(k for k in answer.json()["data"] if k["id"] == key_id)


def sts_arn() -> str:
    """Who the test's AWS credentials are, as the emulator's STS says (what audit entries must name)."""
    import boto3

    return str(boto3.client("sts", endpoint_url=os.environ["AWS_ENDPOINT_URL_STS"]).get_caller_identity()["Arn"])


POLICY = {"input": [{"check": "denylist", "action": "block", "words": ["project falcon"], "name": "codenames"}]}


def test_a_key_made_with_every_governance_flag_is_listed_changed_rotated_and_revoked(momor, tmp_path):
    operator = bootstrap()
    me = api(momor, operator, "GET", "/me").json()
    assert (me["role"], me["managesKeys"], me["organization"]["id"]) == ("operator", True, "default")
    rails = tmp_path / "policy.json"
    rails.write_text(json.dumps(POLICY))
    made = ok(momor_cli(
        "keys", "create", "ci-bot", "--rpm", "60", "--tokens-per-minute", "5000", "--tokens-per-day", "100000",
        "--daily-usd", "5", "--monthly-usd", "50.5", "--max-cost-per-call-usd", "0.25", "--zdr", "--cache",
        "--cache-ttl", "600", "--allow-model", "openai/*", "--allow-model", "claude-sonnet-4-5",
        "--allow-provider", "openai", "--allow-provider", "anthropic", "--budget-model", "gpt-5-mini=2/day",
        "--budget-model", "gpt-5-mini=20/month", "--budget-provider", "openai=30/month",
        "--expires-at", "2099-01-01T00:00:00Z", "--guardrails", str(rails), url=momor.url, key=operator))
    secret = made.stdout.strip()
    assert secret.startswith("momor-") and secret not in made.stderr
    key_id = made.stderr.split("created key ")[1].split()[0]
    key = listed(momor, operator, key_id)
    assert key["name"] == "ci-bot" and key["expiresAt"] == "2099-01-01T00:00:00Z"
    assert {k: key["limits"][k] for k in ("rateLimitPerMinute", "tokensPerMinute", "tokensPerDay", "budgetDailyUsd",
                                          "budgetMonthlyUsd", "maxCostPerCallUsd", "zdr", "cache", "cacheTtlS")} == {
        "rateLimitPerMinute": 60, "tokensPerMinute": 5000, "tokensPerDay": 100000, "budgetDailyUsd": 5.0,
        "budgetMonthlyUsd": 50.5, "maxCostPerCallUsd": 0.25, "zdr": True, "cache": True, "cacheTtlS": 600}
    assert key["allow"] == {"models": ["openai/*", "claude-sonnet-4-5"], "providers": ["openai", "anthropic"]}
    assert key["budgets"] == {"byModel": {"gpt-5-mini": {"dailyUsd": 2.0, "monthlyUsd": 20.0}},
                              "byProvider": {"openai": {"dailyUsd": None, "monthlyUsd": 30.0}}}
    assert key["guardrails"]["input"][0]["name"] == "codenames"
    assert api(momor, secret, "GET", "/me").json()["id"] == key_id  # the printed secret is the key's

    table = ok(momor_cli("keys", "list", url=momor.url, key=operator))
    row = next(line for line in table.stdout.splitlines() if line.startswith(key_id))
    assert "ci-bot" in row and "active" in row and "tpm=5000" in row and "$5/day" in row
    as_json = json.loads(ok(momor_cli("keys", "list", "--json", url=momor.url, key=operator)).stdout)
    assert key_id in {k["id"] for k in as_json["data"]}
    shown = ok(momor_cli("keys", "show", key_id, url=momor.url, key=operator)).stdout
    assert any(line.split() == ["limits.tokensPerMinute", "5000"] for line in shown.splitlines()), shown

    ok(momor_cli("keys", "update", key_id, "--name", "ci-robot", "--tokens-per-minute", "8000",
                 "--daily-usd", "none", "--allow-model", "none", "--budget-provider", "none", "--no-cache",
                 "--expires-at", "none", url=momor.url, key=operator))
    key = listed(momor, operator, key_id)
    assert (key["name"], key["limits"]["tokensPerMinute"], key["limits"]["budgetDailyUsd"]) == ("ci-robot", 8000, None)
    assert (key["allow"]["models"], key["budgets"]["byProvider"], key["limits"]["cache"]) == (None, None, False)
    assert key["expiresAt"] is None and key["allow"]["providers"] == ["openai", "anthropic"]  # left as it was

    rotated = ok(momor_cli("keys", "rotate", key_id, "--grace-seconds", "300", url=momor.url, key=operator))
    new_secret = rotated.stdout.strip()
    assert new_secret.startswith("momor-") and new_secret != secret and new_secret not in rotated.stderr
    assert "the old secret works until" in rotated.stderr
    assert api(momor, new_secret, "GET", "/me").status_code == 200
    assert api(momor, secret, "GET", "/me").status_code == 200  # within its grace
    ok(momor_cli("keys", "revoke", key_id, url=momor.url, key=operator))
    assert api(momor, new_secret, "GET", "/me").status_code == 401
    assert "revoked" in ok(momor_cli("keys", "list", url=momor.url, key=operator)).stdout

    log = ok(momor_cli("audit", url=momor.url, key=operator))
    entries = json.loads(ok(momor_cli("audit", "--json", "--limit", "50", url=momor.url, key=operator)).stdout)["data"]
    mine = [(e["action"], e["target"]) for e in entries if e["target"] == key_id]
    assert mine == [("key.revoke", key_id), ("key.rotate", key_id), ("key.change", key_id), ("key.create", key_id)]
    change = next(e for e in entries if e["action"] == "key.change")
    assert change["changes"]["limits.tokensPerMinute"] == {"from": 5000, "to": 8000}
    assert change["changes"]["name"] == {"from": "ci-bot", "to": "ci-robot"}
    assert "limits.tokensPerMinute: 5000 -> 8000" in log.stdout and "key.revoke" in log.stdout
    booted = next(e for e in entries if e["action"] == "key.create" and e["actor"]["kind"] == "script")
    assert booted["actor"]["id"] == sts_arn() and booted["changes"]["role"]["to"] == "operator"
    for done in (made, table, rotated, log):
        for secret_text in (operator, secret, new_secret):
            assert secret_text not in done.stderr
    for secret_text in (operator, secret, new_secret):
        assert secret_text not in log.stdout and secret_text not in json.dumps(entries)


def test_a_bad_value_exits_non_zero_with_the_apis_own_message(momor):
    operator = bootstrap()
    for flags, body, field in (
            (["--tokens-per-minute", "-5"], {"limits": {"tokensPerMinute": -5}}, "limits.tokensPerMinute"),
            (["--daily-usd", "lots"], {"limits": {"budgetDailyUsd": "lots"}}, "limits.budgetDailyUsd"),
            (["--expires-at", "2020-01-01T00:00:00Z"], {"expiresAt": "2020-01-01T00:00:00Z"}, "expiresAt"),
            (["--allow-model", "no-such-model"], {"allow": {"models": ["no-such-model"]}}, "allow.models[0]")):
        done = momor_cli("keys", "create", "bad", *flags, url=momor.url, key=operator)
        assert done.returncode == 1 and done.stdout == "", (flags, done.stdout, done.stderr)
        # What the key API itself answers to the same body, word for word.
        answer = api(momor, operator, "POST", "/keys", {"name": "bad", **body})
        assert answer.status_code == 400 and field in answer.json()["detail"], answer.text
        assert done.stderr.strip() == f"momor: {answer.json()['detail']} (HTTP 400)"
    assert "bad" not in {k["name"] for k in api(momor, operator, "GET", "/keys").json()["data"]}
    member = momor_cli("keys", "list", url=momor.url, key=momor.api_key)  # a key made for calls manages none
    assert member.returncode == 1 and "manages no keys" in member.stderr and "HTTP 403" in member.stderr
    bad_budget = momor_cli("keys", "create", "bad", "--budget-model", "opus", url=momor.url, key=operator)
    assert bad_budget.returncode == 2 and "NAME=USD/month" in bad_budget.stderr
    flags = ok(momor_cli("keys", "list", "--json", "--url", momor.url, "--api-key", operator))  # no MOMOR_* set
    assert "operators" in {k["name"] for k in json.loads(flags.stdout)["data"]}
    bad_from = momor_cli("audit", "--from", "last tuesday", url=momor.url, key=operator)
    assert bad_from.returncode == 1 and "from must be an ISO 8601 date or time" in bad_from.stderr
    long_ago = ok(momor_cli("audit", "--from", "2020-01-01", "--to", "2020-01-02", "--json", url=momor.url,
                            key=operator))
    assert json.loads(long_ago.stdout) == {"data": []}  # the bootstrap's entry is today's, outside that time
    assert len(json.loads(ok(momor_cli("audit", "--json", url=momor.url, key=operator)).stdout)["data"]) == 1
    keyless = momor_cli("keys", "list", url=momor.url)
    assert keyless.returncode == 1 and "MOMOR_API_KEY" in keyless.stderr and "--bootstrap" in keyless.stderr
    for done in (member, keyless):
        assert operator not in done.stderr and momor.api_key not in done.stderr


def test_organizations_are_made_changed_and_shown_and_their_audit_log_names_the_operator(momor):
    made = ok(momor_cli("org", "create", "Research", "--monthly-usd", "500", "--allow-provider", "openai",
                        "--tokens-per-minute", "10000"))
    org_id = made.stdout.strip()
    ok(momor_cli("org", "update", org_id, "--name", "Research lab", "--monthly-usd", "none",
                 "--allow-model", "openai/*", "--tokens-per-day", "200000", "--members-create-keys", "--zdr"))
    shown = json.loads(ok(momor_cli("org", "show", org_id, "--json")).stdout)
    limits = shown["limits"]
    assert (shown["name"], limits["budgetMonthlyUsd"], limits["tokensPerMinute"], limits["tokensPerDay"]) == (
        "Research lab", None, 10000, 200000)
    assert shown["allow"] == {"models": ["openai/*"], "providers": ["openai"]}
    assert shown["membersCreateKeys"] is True and limits["zdr"] is True
    assert shown["operatorLimits"]["limits.tokensPerDay"] == 200000  # what an operator set binds the admins
    assert org_id in ok(momor_cli("org", "list")).stdout
    ok(momor_cli("org", "add-member", org_id, "--sub", "sub-of-ada", "--role", "member", "--email", "ada@example.com"))
    assert json.loads(ok(momor_cli("org", "show", org_id, "--json")).stdout)["members"] == {"sub-of-ada": "member"}
    admin = bootstrap("--org", org_id, "--role", "admin")
    me = api(momor, admin, "GET", "/me").json()  # what the server reads is what the CLI wrote
    assert (me["role"], me["organization"]["name"], me["organization"]["membersCreateKeys"]) == (
        "admin", "Research lab", True)
    assert me["organization"]["defaults"]["zdr"] is True

    entries = json.loads(ok(momor_cli("audit", "--json", url=momor.url, key=admin)).stdout)["data"]
    assert [e["action"] for e in entries] == ["key.create", "member.add", "organization.change", "organization.create"]
    assert entries[1]["target"] == "sub-of-ada" and entries[1]["changes"] == {"role": {"from": None, "to": "member"}}
    change = entries[2]["changes"]
    assert change["name"] == {"from": "Research", "to": "Research lab"}
    assert change["limits.budgetMonthlyUsd"] == {"from": 500.0, "to": None}
    assert change["allow.models"] == {"from": None, "to": ["openai/*"]}
    assert "allow.providers" not in change  # left as it was
    # The organization API reads what the CLI wrote, as its admin sees it, and holds the admin to it.
    settings = api(momor, admin, "GET", f"/organizations/{org_id}").json()
    assert (settings["name"], settings["limits"]["tokensPerDay"]) == ("Research lab", 200000)
    raised = api(momor, admin, "PATCH", f"/organizations/{org_id}", {"limits": {"tokensPerDay": 300000}})
    assert raised.status_code == 403 and "limits.tokensPerDay" in raised.json()["detail"]
    assert {e["actor"]["id"] for e in entries} == {sts_arn()}
    assert admin not in json.dumps(entries)

    wrong = momor_cli("org", "update", org_id, "--tokens-per-day", "many")
    assert wrong.returncode == 1 and "limits.tokensPerDay must be a whole number" in wrong.stderr
    missing = momor_cli("org", "show", "no-such-org")
    assert missing.returncode == 1 and "no organization 'no-such-org'" in missing.stderr


def test_the_bootstrap_names_the_operator_plainly_where_sts_does_not_answer(momor):
    with socket.socket() as closed:  # a port nothing listens on: STS refuses the connection
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    operator = bootstrap("--owner", "platform team", AWS_ENDPOINT_URL_STS=f"http://127.0.0.1:{port}")
    (entry,) = api(momor, operator, "GET", "/audit").json()["data"]
    assert entry["action"] == "key.create" and entry["actor"] == {
        "id": "operator", "name": "momor keys create --bootstrap", "kind": "script", "role": "operator"}
    assert operator not in json.dumps(entry)


def test_an_organizations_model_and_provider_budgets_are_set_by_the_cli_and_read_by_its_api(momor):
    org_id = ok(momor_cli("org", "create", "Budgets")).stdout.strip()
    ok(momor_cli("org", "update", org_id, "--budget-model", "claude-sonnet-4-5=50/month",
                 "--budget-model", "claude-sonnet-4-5=5/day", "--budget-provider", "openai=20/month"))
    admin = bootstrap("--org", org_id, "--role", "admin")
    settings = api(momor, admin, "GET", f"/organizations/{org_id}").json()
    assert settings["budgets"]["byModel"] == {"claude-sonnet-4-5": {"monthlyUsd": 50, "dailyUsd": 5}}
    assert settings["budgets"]["byProvider"] == {"openai": {"dailyUsd": None, "monthlyUsd": 20}}
    ok(momor_cli("org", "update", org_id, "--budget-provider", "none"))
    settings = api(momor, admin, "GET", f"/organizations/{org_id}").json()
    assert not (settings["budgets"].get("byProvider")) and settings["budgets"]["byModel"]
    bad = momor_cli("org", "update", org_id, "--budget-model", "claude-sonnet-4-5=50/week")
    assert bad.returncode == 2 and "week" in bad.stderr
