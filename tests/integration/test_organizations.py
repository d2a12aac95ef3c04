"""Organizations and signed-in sessions over HTTP (issue 26): a person signs in with the user-pool
emulator (moto's Cognito, on the session's moto_server), calls every dialect with the token, and the
record names them; an organization's defaults shape the plan; its keys are managed over /keys; its
usage is its own; a forged, expired or foreign token is a 401 in each dialect's shape."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx2
import jwt
import moto
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from momor.api import cognito
from momor.config import get_config, reset_config
from momor.store import apikeys, aws, budgets, organizations
from momor.store.organizations import Defaults

PASSWORD = "Passw0rd!Passw0rd"
MOTO_PRIVATE_JWK = Path(moto.__file__).parent / "cognitoidp" / "resources" / "jwks-private.json.gz"


@dataclass
class Pool:
    idp: Any
    pool_id: str
    client_id: str

    def person(self, email: str) -> str:
        """A user in the pool; their Cognito sub."""
        self.idp.admin_create_user(UserPoolId=self.pool_id, Username=email, MessageAction="SUPPRESS",
                                   UserAttributes=[{"Name": "email", "Value": email}])
        self.idp.admin_set_user_password(UserPoolId=self.pool_id, Username=email, Password=PASSWORD, Permanent=True)
        attributes = self.idp.admin_get_user(UserPoolId=self.pool_id, Username=email)["UserAttributes"]
        return next(a["Value"] for a in attributes if a["Name"] == "sub")

    def token(self, email: str, client_id: str | None = None) -> str:
        answer = self.idp.initiate_auth(ClientId=client_id or self.client_id, AuthFlow="USER_PASSWORD_AUTH",
                                        AuthParameters={"USERNAME": email, "PASSWORD": PASSWORD})
        return answer["AuthenticationResult"]["AccessToken"]

    def client(self) -> str:
        return self.idp.create_user_pool_client(
            UserPoolId=self.pool_id, ClientName=f"c-{uuid.uuid4().hex[:6]}",
            ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"])["UserPoolClient"]["ClientId"]


@pytest.fixture
def pool(momor: Any, momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> Pool:
    """A user pool and the console's app client in moto, and Momor configured to accept its tokens."""
    idp = momor_aws.client("cognito-idp")
    pool_id = idp.create_user_pool(PoolName=f"momor-{uuid.uuid4().hex[:8]}")["UserPool"]["Id"]
    made = Pool(idp, pool_id, "")
    made.client_id = made.client()
    monkeypatch.setenv("MOMOR_COGNITO_USER_POOL_ID", pool_id)
    monkeypatch.setenv("MOMOR_COGNITO_CLIENT_ID", made.client_id)
    monkeypatch.setenv("MOMOR_COGNITO_JWKS_URL", f"{momor_aws.endpoints.moto}/{pool_id}/.well-known/jwks.json")
    # The organization script looks people up in the pool (boto3's cognito-idp, at moto too).
    monkeypatch.setenv("AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER", momor_aws.endpoints.moto)
    aws.reset_clients()
    reset_config()
    cognito.reset()
    organizations.ensure_default()
    return made


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


CHAT = {"model": "openai/gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}
MESSAGES = {"model": "anthropic/claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}


def _anthropic_model(momor: Any) -> str:
    return next(f"{m['publisher']}/{m['name']}".lower() for m in momor.catalog["models"]
                if any(o["provider"] == "anthropic" for o in m["offerings"]) and m.get("tier"))


def test_a_signed_in_person_calls_every_dialect_and_the_record_names_them(momor, pool, capsys):
    org = organizations.create("Acme")
    sub = pool.person("ada@example.com")
    organizations.add_member(org.id, sub, "admin", email="ada@example.com")
    token = pool.token("ada@example.com")

    chat = momor.post("/v1/chat/completions", CHAT, headers=bearer(token))
    messages = momor.post("/messages", {**MESSAGES, "model": _anthropic_model(momor)}, headers=bearer(token))
    native = momor.post("/models", {"systemPrompt": "", "messages": [{"type": "user", "value": "Hi"}],
                                    "model": "openai/gpt-5-mini"}, headers=bearer(token))
    listed = httpx2.get(momor.url + "/models", headers=bearer(token), timeout=30)
    assert [r.status_code for r in (chat, messages, native, listed)] == [200, 200, 200, 200], chat.text
    assert listed.json()["data"]

    for answer in (chat, messages, native):
        got = httpx2.get(f"{momor.url}/generations/{answer.headers['X-Momor-Request-Id']}", headers=bearer(token),
                         timeout=30)
        assert got.status_code == 200, got.text
        record = got.json()
        assert (record["callerId"], record["person"], record["org"]) == (f"p-{sub}", sub, org.id)
        assert record["callerName"] == "ada@example.com"
        assert token not in json.dumps(record)
    # The person's record is theirs: the test's API key (another caller) is not shown it.
    assert momor.get(f"/generations/{chat.headers['X-Momor-Request-Id']}").status_code == 404
    momor.settle()
    logged = capsys.readouterr()
    assert chat.headers["X-Momor-Request-Id"] in logged.out  # the call's log line was captured here
    assert token not in logged.out + logged.err


def test_me_names_the_person_their_role_and_their_organization(momor, pool):
    org = organizations.create("Acme", defaults=Defaults(max_age="P1Y", zdr=True), members_create_keys=True)
    sub = pool.person("bo@example.com")
    organizations.add_member(org.id, sub, "member", email="bo@example.com")
    answer = httpx2.get(momor.url + "/me", headers=bearer(pool.token("bo@example.com")), timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "id": f"p-{sub}", "name": "bo@example.com", "email": "bo@example.com", "role": "member", "managesKeys": True,
        "organization": {"id": org.id, "name": "Acme", "defaults": {"deprecated": None, "maxAge": "P1Y", "zdr": True},
                         "membersCreateKeys": True, "guardrails": {"input": [], "output": []}}}


def test_a_person_in_no_organization_is_a_member_of_the_default_one(momor, pool):
    pool.person("new@example.com")
    answer = httpx2.get(momor.url + "/me", headers=bearer(pool.token("new@example.com")), timeout=30)
    assert answer.status_code == 200, answer.text
    assert (answer.json()["role"], answer.json()["organization"]["id"]) == ("member", organizations.DEFAULT_ORG)


# --- the organization's defaults in planning -----------------------------------------------------


def _aged_catalog(momor: Any) -> None:
    """Two low-tier models on the OpenAI wire: an old cheap one and a recent dearer one."""
    catalog = json.loads(json.dumps(momor.catalog))
    recent = (dt.date.today() - dt.timedelta(days=30)).isoformat()
    caps = {"tools": True, "maxOutputTokens": 4096, "input": ["text"]}
    catalog["cutoff"] = None
    catalog["models"] = [
        {"name": "old-cheap", "publisher": "acme", "tier": "low", "released": "2015-01-01", "capabilities": caps,
         "offerings": [{"provider": "openai", "id": "old-cheap", "prices": {"input": 0.1, "output": 0.1}}]},
        {"name": "new-dear", "publisher": "acme", "tier": "low", "released": recent, "capabilities": caps,
         "offerings": [{"provider": "openai", "id": "new-dear", "prices": {"input": 5.0, "output": 5.0}}]},
    ]
    catalog.pop("router", None)
    momor.write_catalog(catalog)


def _served(answer: httpx2.Response) -> str:
    assert answer.status_code == 200, answer.text
    return answer.json()["model"]


def test_an_org_max_age_default_leaves_an_old_model_out_and_the_calls_own_wins(momor, pool):
    _aged_catalog(momor)
    org = organizations.create("Fresh", defaults=Defaults(max_age="P1Y"))
    key, _ = apikeys.create_api_key("fresh key", org=org.id)
    call = {"model": "tier/low", "messages": [{"role": "user", "content": "Hi"}]}
    # The test's own key is in the default organization, which sets no maxAge: the cheap old model serves.
    assert "old-cheap" in _served(momor.post("/v1/chat/completions", call))
    assert "new-dear" in _served(momor.post("/v1/chat/completions", call, headers=bearer(key)))
    own = {**call, "provider": {"maxAge": "P20Y"}}
    assert "old-cheap" in _served(momor.post("/v1/chat/completions", own, headers=bearer(key)))


def test_an_org_deprecated_default_lets_a_deprecated_model_serve_and_the_calls_own_false_wins(momor, pool):
    _aged_catalog(momor)
    catalog = json.loads(json.dumps(momor.catalog))
    for model in catalog["models"]:  # the cheap one is deprecated now, and young enough for any maxAge
        if model["name"] == "old-cheap":
            model["deprecated"] = True
            model["released"] = dt.date.today().isoformat()
    momor.write_catalog(catalog)
    org = organizations.create("Lenient", defaults=Defaults(deprecated=True))
    key, _ = apikeys.create_api_key("lenient key", org=org.id)
    call = {"model": "tier/low", "messages": [{"role": "user", "content": "Hi"}]}
    assert "new-dear" in _served(momor.post("/v1/chat/completions", call))  # no default: deprecated left out
    assert "old-cheap" in _served(momor.post("/v1/chat/completions", call, headers=bearer(key)))
    own = {**call, "provider": {"deprecated": False}}
    assert "new-dear" in _served(momor.post("/v1/chat/completions", own, headers=bearer(key)))


def test_an_org_under_zdr_refuses_a_non_zdr_route_even_when_the_call_says_false(momor, pool, fake):
    org = organizations.create("Private", defaults=Defaults(zdr=True))
    sub = pool.person("zed@example.com")
    organizations.add_member(org.id, sub, "member")
    token = pool.token("zed@example.com")
    call = {**CHAT, "provider": {"zdr": False}}  # openai's saved key is not marked zdr
    assert momor.post("/v1/chat/completions", call).status_code == 200  # the default organization: served
    fake.reset()
    refused = momor.post("/v1/chat/completions", call, headers=bearer(token))
    assert refused.status_code >= 400 and "zero data retention" in refused.text, refused.text
    assert fake.requests() == []
    # A zdr-covered offering (the anthropic key is marked zdr) still serves the organization.
    served = momor.post("/messages", {**MESSAGES, "model": _anthropic_model(momor)}, headers=bearer(token))
    assert served.status_code == 200, served.text


# --- tokens that are not valid -------------------------------------------------------------------


def _signed(claims: dict[str, Any], key: Any, kid: str = "dummy") -> str:
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def _moto_key() -> Any:
    return jwt.PyJWK(json.loads(gzip.decompress(MOTO_PRIVATE_JWK.read_bytes()))).key


def _claims(pool: Pool, sub: str, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": cognito.issuer(), "sub": sub, "client_id": pool.client_id, "token_use": "access",
            "iat": now, "exp": now + 600, "username": "ada@example.com", **changes}


BAD_TOKENS = ("forged", "expired", "wrong audience", "an id token", "another issuer")


def _bad_token(pool: Pool, why: str) -> str:
    sub = pool.person("ada@example.com")
    now = int(time.time())
    if why == "forged":
        return _signed(_claims(pool, sub), rsa.generate_private_key(public_exponent=65537, key_size=2048))
    if why == "expired":
        return _signed(_claims(pool, sub, iat=now - 7200, exp=now - 3600), _moto_key())
    if why == "wrong audience":  # a real token of the same pool, issued to another app client
        return pool.token("ada@example.com", client_id=pool.client())
    if why == "an id token":
        return _signed(_claims(pool, sub, token_use="id"), _moto_key())
    return _signed(_claims(pool, sub, iss="https://cognito-idp.us-east-1.amazonaws.com/x"), _moto_key())


def test_the_moto_key_signs_a_token_momor_accepts(momor, pool):
    """The bad tokens below are refused for what is wrong with them, not for the key they are signed with."""
    sub = pool.person("ada@example.com")
    good = _signed(_claims(pool, sub), _moto_key())
    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(good)).status_code == 200


@pytest.mark.parametrize("why", BAD_TOKENS)
def test_a_forged_expired_or_foreign_token_is_a_401_in_the_dialects_shape(momor, pool, why, capsys):
    token = _bad_token(pool, why)
    for dialect in ("openai", "anthropic", "native", "models"):
        if dialect == "openai":
            answer = momor.post("/v1/chat/completions", CHAT, headers=bearer(token))
            assert answer.json()["error"]["code"] == "invalid_api_key", why
        elif dialect == "anthropic":
            answer = momor.post("/messages", MESSAGES, headers=bearer(token))
            assert answer.json()["type"] == "error" and answer.json()["error"]["type"] == "authentication_error", why
        elif dialect == "native":
            answer = momor.post("/models", {"systemPrompt": "", "messages": [{"type": "user", "value": "Hi"}]},
                                headers=bearer(token))
            assert answer.headers["content-type"].startswith("application/problem+json"), why
            assert answer.json()["status"] == 401
        else:
            answer = httpx2.get(momor.url + "/models", headers=bearer(token), timeout=30)
        assert answer.status_code == 401, (why, answer.text)
        assert token not in answer.text and "signed-in session is not valid" in answer.text, why
        assert answer.headers.get("x-should-retry") == "false"
    momor.settle()
    logged = capsys.readouterr()
    assert "signed-in session is not valid" in logged.out  # the refusals' log lines were captured here
    assert token not in logged.out + logged.err


# --- keys in the console's API -------------------------------------------------------------------


def _admin(pool: Pool, org_name: str, email: str, **org: Any) -> tuple[organizations.Organization, str]:
    made = organizations.create(org_name, **org)
    organizations.add_member(made.id, pool.person(email), "admin", email=email)
    return made, pool.token(email)


def test_an_admin_creates_a_key_it_works_they_revoke_it_and_it_stops(momor, pool):
    _org, token = _admin(pool, "Acme", "ada@example.com")
    made = httpx2.post(momor.url + "/keys", headers=bearer(token), timeout=30,
                       json={"name": "ci", "limits": {"budgetDailyUsd": 5, "rateLimitPerMinute": 100, "zdr": False}})
    assert made.status_code == 201, made.text
    key = made.json()
    assert key["key"].startswith("momor-") and key["name"] == "ci" and key["disabled"] is False
    assert key["limits"] == {"rateLimitPerMinute": 100, "budgetDailyUsd": 5.0, "budgetMonthlyUsd": None, "zdr": False,
                             "cache": None, "cacheTtlS": None}
    stored = json.dumps(api_keys_items())
    assert key["key"] not in stored  # stored hashed

    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(key["key"])).status_code == 200
    listed = httpx2.get(momor.url + "/keys", headers=bearer(token), timeout=30).json()["data"]
    assert [k["id"] for k in listed] == [key["id"]] and "key" not in listed[0]
    assert listed[0]["spend"]["monthUsd"] > 0

    changed = httpx2.patch(f"{momor.url}/keys/{key['id']}", headers=bearer(token), timeout=30,
                           json={"name": "ci bot", "limits": {"budgetDailyUsd": None}})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["name"], changed.json()["limits"]["budgetDailyUsd"]) == ("ci bot", None)

    revoked = httpx2.delete(f"{momor.url}/keys/{key['id']}", headers=bearer(token), timeout=30)
    assert revoked.status_code == 200 and revoked.json() == {"id": key["id"], "revoked": True}
    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(key["key"])).status_code == 401


def api_keys_items() -> list[dict[str, Any]]:
    return aws.client("dynamodb").scan(TableName=get_config().need("api_keys_table"))["Items"]


def test_a_revoked_key_stops_in_another_warm_process_within_the_cache_bound(momor, pool, monkeypatch):
    """Another process (here: this one's cache, warmed before the revocation it did not make) trusts the
    key for at most MOMOR_API_KEY_CACHE_S."""
    _org, token = _admin(pool, "Acme", "ada@example.com")
    key = httpx2.post(momor.url + "/keys", headers=bearer(token), json={"name": "warm"}, timeout=30).json()
    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(key["key"])).status_code == 200  # cached now
    # Revoked elsewhere: the item changes, this process's cache does not hear of it.
    aws.client("dynamodb").update_item(
        TableName=get_config().need("api_keys_table"), Key={"keyHash": {"S": apikeys.key_hash(key["key"])}},
        UpdateExpression="SET disabled = :t", ExpressionAttributeValues={":t": {"BOOL": True}})
    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(key["key"])).status_code == 200
    later = time.monotonic() + apikeys.cache_seconds() + 1
    monkeypatch.setattr(apikeys, "_clock", lambda: later)
    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(key["key"])).status_code == 401


def test_members_manage_only_their_own_keys_and_only_if_the_org_allows(momor, pool):
    closed = organizations.create("Closed")
    organizations.add_member(closed.id, pool.person("m1@example.com"), "member")
    refused = httpx2.post(momor.url + "/keys", headers=bearer(pool.token("m1@example.com")), json={"name": "x"},
                          timeout=30)
    assert refused.status_code == 403 and refused.json()["status"] == 403

    org, admin = _admin(pool, "Open", "boss@example.com", members_create_keys=True)
    admins_key = httpx2.post(momor.url + "/keys", headers=bearer(admin), json={"name": "admin's"}, timeout=30).json()
    organizations.add_member(org.id, pool.person("m2@example.com"), "member")
    member = pool.token("m2@example.com")
    own = httpx2.post(momor.url + "/keys", headers=bearer(member), json={"name": "mine"}, timeout=30)
    assert own.status_code == 201, own.text
    mine = httpx2.get(momor.url + "/keys", headers=bearer(member), timeout=30).json()["data"]
    assert [k["id"] for k in mine] == [own.json()["id"]]
    assert httpx2.delete(f"{momor.url}/keys/{admins_key['id']}", headers=bearer(member), timeout=30).status_code == 404
    everyone = httpx2.get(momor.url + "/keys", headers=bearer(admin), timeout=30).json()["data"]
    assert {k["id"] for k in everyone} == {admins_key["id"], own.json()["id"]}


def test_an_admin_cannot_reach_another_organizations_key(momor, pool):
    _, admin_a = _admin(pool, "A", "a@example.com")
    _, admin_b = _admin(pool, "B", "b@example.com")
    b_key = httpx2.post(momor.url + "/keys", headers=bearer(admin_b), json={"name": "b's"}, timeout=30).json()
    assert httpx2.get(momor.url + "/keys", headers=bearer(admin_a), timeout=30).json()["data"] == []
    for method in ("PATCH", "DELETE"):
        answer = httpx2.request(method, f"{momor.url}/keys/{b_key['id']}", headers=bearer(admin_a),
                                json={"name": "mine now"} if method == "PATCH" else None, timeout=30)
        assert answer.status_code == 404, answer.text
    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(b_key["key"])).status_code == 200


@pytest.mark.parametrize(("body", "param"), [
    ({}, "name"), ({"name": ""}, "name"), ({"name": "x", "limits": {"budgetDailyUsd": -1}}, "budgetDailyUsd"),
    ({"name": "x", "limits": {"rateLimitPerMinute": 1.5}}, "rateLimitPerMinute"),
    ({"name": "x", "limits": {"zdr": "yes"}}, "zdr"), ({"name": "x", "limits": {"other": 1}}, "other"),
    ({"name": "x", "owner": "someone"}, "owner"),
])
def test_a_bad_key_request_is_a_400_naming_the_field(momor, pool, body, param):
    _, token = _admin(pool, "Acme", "ada@example.com")
    answer = httpx2.post(momor.url + "/keys", headers=bearer(token), json=body, timeout=30)
    assert answer.status_code == 400 and param in answer.json()["detail"], answer.text


# --- usage by organization -----------------------------------------------------------------------


def _members(org_id: str) -> dict[str, str]:
    item = aws.client("dynamodb").get_item(TableName=get_config().need("api_keys_table"),
                                           Key={"keyHash": {"S": organizations.org_key(org_id)}})["Item"]
    return organizations.from_item(item).members


def _usage(momor: Any, token: str, group: str = "key") -> dict[str, Any]:
    momor.settle()
    answer = httpx2.get(f"{momor.url}/usage?group={group}", headers=bearer(token), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_usage_a_member_of_a_sees_nothing_of_b_and_an_admin_sees_their_org_by_key_and_person(momor, pool):
    org_a, admin_a = _admin(pool, "A", "a-admin@example.com")
    member_sub = pool.person("a-member@example.com")
    organizations.add_member(org_a.id, member_sub, "member")
    member_a = pool.token("a-member@example.com")
    _org_b, admin_b = _admin(pool, "B", "b-admin@example.com")
    b_key = httpx2.post(momor.url + "/keys", headers=bearer(admin_b), json={"name": "b key"}, timeout=30).json()
    a_key = httpx2.post(momor.url + "/keys", headers=bearer(admin_a), json={"name": "a key"}, timeout=30).json()
    for credential in (b_key["key"], b_key["key"], admin_b):
        assert momor.post("/v1/chat/completions", CHAT, headers=bearer(credential)).status_code == 200
    for credential in (a_key["key"], member_a):
        assert momor.post("/v1/chat/completions", CHAT, headers=bearer(credential)).status_code == 200

    member_view = _usage(momor, member_a)
    assert (member_view["scope"], member_view["records"]) == ("own", 1)
    assert [(g["name"], g["label"]) for g in member_view["groups"]["key"]] == [
        (f"p-{member_sub}", "a-member@example.com")]

    admin_view = _usage(momor, admin_a)
    assert (admin_view["scope"], admin_view["records"]) == ("organization", 2)
    shown = json.dumps(admin_view)
    assert b_key["id"] not in shown and "b key" not in shown and "b-admin" not in shown
    assert {g["label"] for g in admin_view["groups"]["key"]} == {"a key", "a-member@example.com"}
    admin_sub = next(p for p, role in _members(org_a.id).items() if role == "admin")
    by_person = _usage(momor, admin_a, "person")["groups"]["person"]
    # The admin's key is theirs (they made it in the console), the member called signed in.
    assert sorted((g["name"], g["calls"]) for g in by_person) == sorted([(admin_sub, 1), (member_sub, 1)])

    b_view = _usage(momor, admin_b)
    assert b_view["records"] == 3 and a_key["id"] not in json.dumps(b_view)
    # The test's own key is an ordinary member key of the default organization: it sees only its own calls.
    assert _usage(momor, momor.api_key)["records"] == 0


# --- setup: the scripts ---------------------------------------------------------------------------


def test_the_key_script_makes_the_default_org_and_gives_it_keys_made_before_organizations(momor_aws, capsys):
    from infra import create_api_key as script

    table = momor_aws.api_keys_table
    ddb = momor_aws.client("dynamodb")
    ddb.put_item(TableName=table, Item={"keyHash": {"S": "0" * 64}, "id": {"S": "0" * 16}, "name": {"S": "old"},
                                        "created": {"S": "2024-01-01T00:00:00+00:00"}, "disabled": {"BOOL": False}})
    script.main(["first key"])
    key = capsys.readouterr().out.strip()
    default = ddb.get_item(TableName=table, Key={"keyHash": {"S": "org#default"}})["Item"]
    assert default["name"] == {"S": "Default"}
    old = ddb.get_item(TableName=table, Key={"keyHash": {"S": "0" * 64}})["Item"]
    assert old["org"] == {"S": "default"}
    new = ddb.get_item(TableName=table, Key={"keyHash": {"S": apikeys.key_hash(key)}})["Item"]
    assert new["org"] == {"S": "default"}
    script.main(["second key"])  # the default organization is there: left as it is
    assert ddb.get_item(TableName=table, Key={"keyHash": {"S": "org#default"}})["Item"] == default


def test_the_organization_script_makes_one_and_adds_a_person_by_user_name(momor, pool, capsys):
    from infra import organization as script

    script.main(["create", "Acme", "--max-age", "P1Y", "--zdr", "--members-create-keys"])
    org_id = capsys.readouterr().out.strip()
    sub = pool.person("cy@example.com")
    script.main(["add-member", org_id, "--username", "cy@example.com", "--user-pool", pool.pool_id,
                 "--role", "admin", "--email", "cy@example.com"])
    me = httpx2.get(momor.url + "/me", headers=bearer(pool.token("cy@example.com")), timeout=30).json()
    assert (me["id"], me["role"], me["organization"]["id"]) == (f"p-{sub}", "admin", org_id)
    assert me["organization"]["defaults"] == {"deprecated": None, "maxAge": "P1Y", "zdr": True}
    with pytest.raises(SystemExit):
        script.main(["create", "Bad", "--max-age", "soon"])


# --- the organization's budgets, on top of its keys' own -----------------------------------------


def _org_spend(org_id: str) -> dict[str, Any]:
    month = dt.datetime.now(dt.UTC).strftime("%Y-%m")
    return aws.client("dynamodb").get_item(TableName=get_config().need("api_keys_table"), ConsistentRead=True,
                                           Key={"keyHash": {"S": f"spend#org:{org_id}#{month}"}}).get("Item", {})


def test_an_organizations_spent_budget_refuses_its_keys_and_people_but_no_one_else(momor, pool, fake):
    org = organizations.create("Thrifty", budget_daily=Decimal(0))
    key, _ = apikeys.create_api_key("no limit of its own", org=org.id)
    organizations.add_member(org.id, pool.person("t@example.com"), "member")
    fake.reset()
    for credential in (key, pool.token("t@example.com")):
        refused = momor.post("/v1/chat/completions", CHAT, headers=bearer(credential))
        assert refused.status_code == 402, refused.text
        assert "your organization's daily limit of $0" in refused.json()["error"]["message"]
    assert fake.requests() == []
    assert momor.post("/v1/chat/completions", CHAT).status_code == 200  # the default organization has no limit


def test_an_organizations_budget_counts_every_call_of_its_keys_and_releases_a_key_hold_it_refuses(momor, pool):
    org = organizations.create("Counted", budget_monthly=Decimal(100))
    key, caller = apikeys.create_api_key("limited key", org=org.id)
    budgets.set_limits(apikeys.key_hash(key), daily=Decimal(100))
    answer = momor.post("/v1/chat/completions", CHAT, headers=bearer(key))
    assert answer.status_code == 200, answer.text
    momor.settle()
    spent = _org_spend(org.id)
    assert Decimal(spent["month"]["N"]) > 0 and Decimal(spent["held"]["N"]) == 0
    assert Decimal(answer.headers[budgets.REMAINING_HEADER]) <= Decimal(100)
    # The organization's limit now refuses: the key's own hold, taken first, is released (not left held).
    organizations_table_set(org.id, "budgetMonthlyUsd", "0")
    refused = momor.post("/v1/chat/completions", CHAT, headers=bearer(key))
    assert refused.status_code == 402 and "organization's monthly limit" in refused.text
    momor.settle()
    month = dt.datetime.now(dt.UTC).strftime("%Y-%m")
    own = aws.client("dynamodb").get_item(TableName=get_config().need("api_keys_table"), ConsistentRead=True,
                                          Key={"keyHash": {"S": f"spend#{caller.id}#{month}"}})["Item"]
    for _ in range(50):  # the release is settled in the background
        if Decimal(own["held"]["N"]) == 0:
            break
        time.sleep(0.05)
        own = aws.client("dynamodb").get_item(TableName=get_config().need("api_keys_table"), ConsistentRead=True,
                                              Key={"keyHash": {"S": f"spend#{caller.id}#{month}"}})["Item"]
    assert Decimal(own["held"]["N"]) == 0


def organizations_table_set(org_id: str, attribute: str, number: str) -> None:
    aws.client("dynamodb").update_item(
        TableName=get_config().need("api_keys_table"), Key={"keyHash": {"S": organizations.org_key(org_id)}},
        UpdateExpression="SET #a = :v", ExpressionAttributeNames={"#a": attribute},
        ExpressionAttributeValues={":v": {"N": number}})
    organizations.reset_cache()
