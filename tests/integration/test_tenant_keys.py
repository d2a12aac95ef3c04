"""The key API for many tenants (issue 33), over HTTP against the running app with several
organizations, their admins, members, signed-in people and keys: a key made for calls manages no
keys; limits an admin set stay set (a member may tighten them only); a member's rate is never 0 and
at most the deployment's; a person's keys are capped; operator keys are out of an organization
admin's reach; a bad value is a 400 naming the field and leaves no key behind."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import httpx2
import pytest

from momor.config import get_config, reset_config
from momor.store import apikeys, aws, budgets, key_admin

CHAT = {"model": "openai/gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}", "Content-Type": "application/json"}


def api(momor: Any, credential: str, method: str, path: str = "", body: Any = None) -> httpx2.Response:
    return httpx2.request(method, f"{momor.url}/keys{path}", headers=bearer(credential), timeout=30,
                          json=body)


def made(answer: httpx2.Response) -> dict[str, Any]:
    assert answer.status_code == 201, answer.text
    return answer.json()


def refused(answer: httpx2.Response, status: int, *words: str) -> str:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    detail = answer.json()["detail"]
    for word in words:
        assert word in detail, detail
    return detail


def table() -> str:
    return get_config().need("api_keys_table")


def key_items() -> list[dict[str, Any]]:
    """Every API key's item (organizations, people, windows and key sets left out)."""
    items = aws.client("dynamodb").scan(TableName=table())["Items"]
    return [i for i in items if "created" in i and "id" in i]


def item_of(key_id: str) -> dict[str, Any]:
    return next(i for i in key_items() if i["id"]["S"] == key_id)


def role_key(org_id: str, role: str, *, rate: int | None = None) -> str:
    """An API key of `org_id` with `role` (admin: the organization's; operator: the deployment's)."""
    plaintext, _ = apikeys.create_api_key(f"{role} key", org=org_id, owner=f"{role} script")
    digest = apikeys.key_hash(plaintext)
    if role == "operator":
        budgets.set_limits(digest, admin=True)  # create_api_key --admin
    elif role == "admin":
        aws.client("dynamodb").update_item(TableName=table(), Key={"keyHash": {"S": digest}},
                                           UpdateExpression="SET #r = :r", ExpressionAttributeNames={"#r": "role"},
                                           ExpressionAttributeValues={":r": {"S": "admin"}})
    if rate is not None:
        aws.client("dynamodb").update_item(TableName=table(), Key={"keyHash": {"S": digest}},
                                           UpdateExpression="SET rateLimit = :r",
                                           ExpressionAttributeValues={":r": {"N": str(rate)}})
    return plaintext


@pytest.fixture
def open_org(cognito: Any) -> Any:
    """An organization whose members create keys, with its admin and a member signed in."""
    org_id = cognito.organization("Open", members_create_keys=True)

    class Org:
        id = org_id
        admin = cognito.person(org_id, "admin")
        member = cognito.person(org_id, "member")

    return Org


# --- a key made for calls manages nothing -----------------------------------------------------------


def test_a_key_made_in_the_console_manages_no_keys_not_even_its_makers(momor, open_org):
    member, admin = open_org.member.access_token, open_org.admin.access_token
    mine = made(api(momor, member, "POST", body={"name": "mine"}))
    other = made(api(momor, member, "POST", body={"name": "my other"}))
    admins = made(api(momor, admin, "POST", body={"name": "admin's ci"}))
    for key in (mine["key"], admins["key"]):  # a member's key, and one an admin made: both for calls
        for method, path, body in (("GET", "", None), ("POST", "", {"name": "minted"}),
                                   ("PATCH", f"/{other['id']}", {"limits": {"budgetDailyUsd": None}}),
                                   ("DELETE", f"/{other['id']}", None), ("DELETE", f"/{mine['id']}", None)):
            refused(api(momor, key, method, path, body), 403, "manages no keys")
        me = httpx2.get(momor.url + "/me", headers=bearer(key), timeout=30)
        assert me.status_code == 200 and me.json()["managesKeys"] is False, me.text
        assert momor.post("/v1/chat/completions", CHAT, headers=bearer(key)).status_code == 200  # it still calls
    names = {k["name"]: k["disabled"] for k in api(momor, admin, "GET").json()["data"]}
    assert names == {"mine": False, "my other": False, "admin's ci": False}  # nothing minted, changed or revoked
    assert item_of(other["id"])["name"] == {"S": "my other"}


def test_an_admin_key_and_an_operator_key_manage_their_organizations_keys(momor, open_org):
    for role in ("admin", "operator"):
        key = role_key(open_org.id, role)
        me = httpx2.get(momor.url + "/me", headers=bearer(key), timeout=30).json()
        assert (me["role"], me["managesKeys"]) == (role, True)
        new = made(api(momor, key, "POST", body={"name": f"by the {role} key"}))
        assert new["owner"] == f"{role} script"
        assert api(momor, key, "PATCH", f"/{new['id']}", {"name": "renamed"}).json()["name"] == "renamed"
        assert api(momor, key, "DELETE", f"/{new['id']}").json() == {"id": new["id"], "revoked": True}


# --- limits an admin set stay set -------------------------------------------------------------------


def test_a_member_may_tighten_what_an_admin_set_never_raise_or_remove_it(momor, open_org):
    member, admin = open_org.member.access_token, open_org.admin.access_token
    key = made(api(momor, member, "POST", body={"name": "mine", "limits": {"budgetDailyUsd": 10}}))
    path = f"/{key['id']}"
    assert api(momor, member, "PATCH", path, {"limits": {"budgetDailyUsd": 20}}).status_code == 200  # nobody set it
    set_ = api(momor, admin, "PATCH", path, {"limits": {"budgetDailyUsd": 5, "budgetMonthlyUsd": 100,
                                                        "rateLimitPerMinute": 50, "zdr": True}})
    assert set_.status_code == 200, set_.text
    assert set_.json()["adminLimits"] == {"budgetDailyUsd": 5.0, "budgetMonthlyUsd": 100.0,
                                          "rateLimitPerMinute": 50, "zdr": True}
    for limits in ({"budgetDailyUsd": 20}, {"budgetDailyUsd": None}, {"budgetMonthlyUsd": None}, {"zdr": False},
                   {"rateLimitPerMinute": 100}, {"rateLimitPerMinute": None}, {"budgetDailyUsd": 5.01}):
        (name,) = limits
        refused(api(momor, member, "PATCH", path, {"limits": limits}), 403, f"limits.{name}", "an admin set it")
    item = item_of(key["id"])
    assert (item["budgetDailyUsd"], item["budgetMonthlyUsd"], item["rateLimit"], item["zdr"]) == (
        {"N": "5"}, {"N": "100"}, {"N": "50"}, {"BOOL": True})
    # Tighter is fine, and back up to what the admin set, with the name and the rest as they were.
    lowered = api(momor, member, "PATCH", path, {"name": "renamed", "limits": {
        "budgetDailyUsd": 2, "rateLimitPerMinute": 10, "zdr": True}})
    assert lowered.status_code == 200, lowered.text
    assert lowered.json()["limits"] == {"rateLimitPerMinute": 10, "budgetDailyUsd": 2.0, "budgetMonthlyUsd": 100.0,
                                        "zdr": True, "cache": None, "cacheTtlS": None}
    assert api(momor, member, "PATCH", path, {"limits": {"budgetDailyUsd": 5}}).status_code == 200
    refused(api(momor, member, "PATCH", path, {"limits": {"budgetDailyUsd": 6}}), 403, "limits.budgetDailyUsd")
    # The admin lifts its daily limit: the member is free there again, and held everywhere else.
    assert api(momor, admin, "PATCH", path, {"limits": {"budgetDailyUsd": None}}).status_code == 200
    freed = api(momor, member, "PATCH", path, {"limits": {"budgetDailyUsd": 50}})
    assert freed.json()["limits"]["budgetDailyUsd"] == 50, freed.text
    refused(api(momor, member, "PATCH", path, {"limits": {"zdr": False}}), 403, "limits.zdr")
    # The limits are the ones the calls meet: the key is held to zero data retention (openai's saved key is not).
    answer = momor.post("/v1/chat/completions", CHAT, headers=bearer(key["key"]))
    assert answer.status_code >= 400 and "zero data retention" in answer.text, answer.text


def test_a_members_rate_is_never_zero_and_at_most_the_deployments(momor, open_org):
    member, admin = open_org.member.access_token, open_org.admin.access_token
    refused(api(momor, member, "POST", body={"name": "x", "limits": {"rateLimitPerMinute": 0}}), 400,
            "limits.rateLimitPerMinute", "only an admin")
    deployment = get_config().rate_limit
    refused(api(momor, member, "POST", body={"name": "x", "limits": {"rateLimitPerMinute": deployment + 1}}), 403,
            "limits.rateLimitPerMinute", f"the deployment's own limit is {deployment:,}")
    key = made(api(momor, member, "POST", body={"name": "x", "limits": {"rateLimitPerMinute": deployment}}))
    refused(api(momor, member, "PATCH", f"/{key['id']}", {"limits": {"rateLimitPerMinute": 0}}), 400,
            "limits.rateLimitPerMinute")
    assert item_of(key["id"])["rateLimit"] == {"N": str(deployment)}
    # An admin may lift it (0: no limit) or set it above the deployment's; the member then may go as high.
    lifted = api(momor, admin, "PATCH", f"/{key['id']}", {"limits": {"rateLimitPerMinute": 0}})
    assert lifted.status_code == 200 and lifted.json()["limits"]["rateLimitPerMinute"] == 0, lifted.text
    answer = momor.post("/v1/chat/completions", CHAT, headers=bearer(key["key"]))
    assert answer.status_code == 200 and "X-RateLimit-Limit" not in answer.headers
    high = api(momor, member, "PATCH", f"/{key['id']}", {"limits": {"rateLimitPerMinute": deployment * 10}})
    assert high.status_code == 200, high.text


def test_an_organizations_admin_is_held_to_what_an_operator_set(momor, open_org):
    admin = open_org.admin.access_token
    operator = role_key(open_org.id, "operator")
    key = made(api(momor, open_org.member.access_token, "POST", body={"name": "member's"}))
    path = f"/{key['id']}"
    assert api(momor, operator, "PATCH", path, {"limits": {"budgetMonthlyUsd": 40}}).status_code == 200
    assert api(momor, admin, "PATCH", path, {"limits": {"budgetMonthlyUsd": 30}}).status_code == 200
    refused(api(momor, admin, "PATCH", path, {"limits": {"budgetMonthlyUsd": 41}}), 403, "an operator set it to 40")
    # The member is held to the tightest: what the admin set below the operator's.
    refused(api(momor, open_org.member.access_token, "PATCH", path, {"limits": {"budgetMonthlyUsd": 35}}), 403,
            "limits.budgetMonthlyUsd")
    assert api(momor, operator, "PATCH", path, {"limits": {"budgetMonthlyUsd": 99}}).status_code == 200


async def test_a_change_checked_against_limits_an_admin_changed_meanwhile_is_not_written(momor, open_org):
    """The check and the write are one: a member's change read before an admin set a limit is refused
    by the store (key_admin.Changed), and the key API checks it again."""
    key = made(api(momor, open_org.member.access_token, "POST", body={"name": "raced"}))
    before = await key_admin.read(apikeys.key_hash(key["key"]))
    assert before is not None and before.set_by == {}
    assert api(momor, open_org.admin.access_token, "PATCH", f"/{key['id']}",
               {"limits": {"budgetDailyUsd": 1}}).status_code == 200
    with pytest.raises(key_admin.Changed):
        await key_admin.change(before, name=None, limits={"budgetDailyUsd": None}, set_by={})
    assert item_of(key["id"])["budgetDailyUsd"] == {"N": "1"}
    after = await key_admin.read(apikeys.key_hash(key["key"]))
    with pytest.raises(key_admin.Changed):  # an admin's own stale change is refused the same way
        await key_admin.change(before, name="x", limits={}, set_by={})
    assert after is not None and after.set_by == {"budgetDailyUsd": {"admin": 1}}


# --- how many keys a person has ---------------------------------------------------------------------


def test_a_person_has_at_most_the_deployments_number_of_keys(momor, open_org, monkeypatch):
    monkeypatch.setenv("MOMOR_KEYS_PER_PERSON", "3")
    reset_config()
    member = open_org.member.access_token
    keys = [made(api(momor, member, "POST", body={"name": f"k{n}"})) for n in range(3)]
    refused(api(momor, member, "POST", body={"name": "one too many"}), 403, "MOMOR_KEYS_PER_PERSON = 3")
    assert api(momor, member, "DELETE", f"/{keys[0]['id']}").status_code == 200
    made(api(momor, member, "POST", body={"name": "in its place"}))
    refused(api(momor, member, "POST", body={"name": "again too many"}), 403, "MOMOR_KEYS_PER_PERSON")
    # A key revoked by other means (the script, the table) is found when the set is full.
    apikeys.set_disabled(apikeys.key_hash(keys[1]["key"]))
    made(api(momor, member, "POST", body={"name": "after a revocation elsewhere"}))
    # The cap is a person's: another person of the organization has their own.
    made(api(momor, open_org.admin.access_token, "POST", body={"name": "the admin's"}))
    names = [k["name"] for k in api(momor, member, "GET").json()["data"] if not k["disabled"]]
    assert len(names) == 3, names


def test_keys_made_before_the_cap_was_kept_count_towards_it(momor, open_org, monkeypatch):
    monkeypatch.setenv("MOMOR_KEYS_PER_PERSON", "2")
    reset_config()
    for n in range(2):  # as the console made them before: the owner's keys, and no key set
        apikeys.create_api_key(f"older {n}", owner=open_org.member.sub, org=open_org.id)
    refused(api(momor, open_org.member.access_token, "POST", body={"name": "new"}), 403, "MOMOR_KEYS_PER_PERSON")


def test_concurrent_requests_do_not_pass_the_cap_on_a_persons_keys(momor, open_org, monkeypatch):
    monkeypatch.setenv("MOMOR_KEYS_PER_PERSON", "3")
    reset_config()
    member = open_org.member.access_token
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: api(momor, member, "POST", body={"name": f"burst {n}"}), range(8)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses.count(201) == 3 and set(statuses) <= {201, 403, 409}, [a.text for a in answers]
    assert len([k for k in api(momor, member, "GET").json()["data"] if not k["disabled"]]) == 3


# --- operator keys are out of an organization admin's reach ----------------------------------------


def test_an_organizations_admin_cannot_change_or_revoke_an_operator_key(momor, open_org):
    operator = role_key(open_org.id, "operator")
    operator_id = apikeys.key_hash(operator)[:16]
    admin = open_org.admin.access_token
    listed = {k["id"]: k for k in api(momor, admin, "GET").json()["data"]}
    assert listed[operator_id]["role"] == "operator"  # shown, and what it is
    refused(api(momor, admin, "PATCH", f"/{operator_id}", {"limits": {"rateLimitPerMinute": 1}}), 403,
            "operator's key")
    refused(api(momor, admin, "DELETE", f"/{operator_id}"), 403, "operator's key")
    assert "rateLimit" not in item_of(operator_id) and item_of(operator_id)["disabled"] == {"BOOL": False}
    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(operator)).status_code == 200
    # An admin key of the organization is within its admin's reach.
    admin_key = role_key(open_org.id, "admin")
    assert api(momor, admin, "DELETE", f"/{apikeys.key_hash(admin_key)[:16]}").status_code == 200


# --- no bare 500s ---------------------------------------------------------------------------------


BAD = [
    ({"name": "x", "limits": {"budgetDailyUsd": 1e200}}, "limits.budgetDailyUsd"),
    ({"name": "x", "limits": {"budgetDailyUsd": "1e200"}}, "limits.budgetDailyUsd"),
    ({"name": "x", "limits": {"budgetMonthlyUsd": "NaN"}}, "limits.budgetMonthlyUsd"),
    ({"name": "x", "limits": {"budgetMonthlyUsd": "-Infinity"}}, "limits.budgetMonthlyUsd"),
    ({"name": "x", "limits": {"budgetDailyUsd": "1" * 3000}}, "limits.budgetDailyUsd"),
    ({"name": "x", "limits": {"budgetDailyUsd": [5]}}, "limits.budgetDailyUsd"),
    ({"name": "x", "limits": {"budgetDailyUsd": True}}, "limits.budgetDailyUsd"),
    ({"name": "x", "limits": {"rateLimitPerMinute": 10**30}}, "limits.rateLimitPerMinute"),
    ({"name": "x", "limits": {"rateLimitPerMinute": 18446744073709551615}}, "limits.rateLimitPerMinute"),
    ({"name": "x", "limits": {"rateLimitPerMinute": "5"}}, "limits.rateLimitPerMinute"),
    ({"name": "x", "limits": {"rateLimitPerMinute": -1}}, "limits.rateLimitPerMinute"),
    ({"name": "x", "limits": {"zdr": 1}}, "limits.zdr"),
    ({"name": "x", "limits": [1]}, "limits"),
    ({"name": "x" * 3000}, "name"),
    ({"name": ["x"]}, "name"),
]


@pytest.mark.parametrize(("body", "field"), BAD, ids=[f"{f}={str(b)[:40]}" for b, f in BAD])
def test_a_bad_value_is_a_400_naming_the_field_and_leaves_no_key_behind(momor, open_org, body, field):
    admin = open_org.admin.access_token
    refused(api(momor, admin, "POST", body=body), 400, field)
    assert [i["name"]["S"] for i in key_items()] == ["integration test"]  # the harness's own key: nothing made
    kept = made(api(momor, admin, "POST", body={"name": "kept", "limits": {"budgetDailyUsd": 3}}))
    if "name" in body and field != "name":
        body = {k: v for k, v in body.items() if k != "name"}
    refused(api(momor, admin, "PATCH", f"/{kept['id']}", body), 400, field)
    item = item_of(kept["id"])
    assert (item["name"], item["budgetDailyUsd"], "rateLimit" in item) == ({"S": "kept"}, {"N": "3"}, False)


def test_a_generations_id_of_3000_characters_is_a_400(momor):
    answer = momor.get("/generations/" + "a" * 3000)
    assert answer.status_code == 400 and answer.headers["content-type"].startswith("application/problem+json")
    assert "id" in answer.json()["detail"]
    assert momor.get("/generations/" + "0" * 32).status_code == 404  # an id of the right form is looked up


def test_a_budget_is_kept_to_what_the_store_can_hold(momor, open_org):
    key = made(api(momor, open_org.admin.access_token, "POST", body={"name": "float", "limits": {
        "budgetDailyUsd": 0.1 + 0.2, "budgetMonthlyUsd": 1e-30}}))
    assert key["limits"]["budgetDailyUsd"] == 0.3 and key["limits"]["budgetMonthlyUsd"] == 0.0


def test_limits_the_key_script_set_are_an_operators(momor, open_org, capsys):
    from infra import create_api_key as script

    script.main(["for the member", "--org", open_org.id, "--owner", open_org.member.sub, "--daily-usd", "5"])
    key_id = next(i["id"]["S"] for i in key_items() if i["name"]["S"] == "for the member")
    member, admin = open_org.member.access_token, open_org.admin.access_token
    refused(api(momor, member, "PATCH", f"/{key_id}", {"limits": {"budgetDailyUsd": 6}}), 403,
            "an operator set it to 5")
    refused(api(momor, admin, "PATCH", f"/{key_id}", {"limits": {"budgetDailyUsd": None}}), 403, "an operator")
    assert api(momor, member, "PATCH", f"/{key_id}", {"limits": {"budgetDailyUsd": 4}}).status_code == 200
    script.main(["--update", key_id, "--daily-usd", "none"])  # the operator lifts it: the member is free
    assert api(momor, member, "PATCH", f"/{key_id}", {"limits": {"budgetDailyUsd": 60}}).status_code == 200
    capsys.readouterr()
