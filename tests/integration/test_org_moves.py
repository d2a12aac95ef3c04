"""A person moved to another organization leaves the old one (issue 33): adding them elsewhere takes
them out of the organization they were in (and revokes the keys they made there), `remove-member`
takes them out of one, and an admin's /usage counts a person's calls only while they were in the
admin's organization, so neither organization reads the other's."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from momor.config import get_config
from momor.store import aws, organizations

CHAT = {"model": "openai/gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}", "Content-Type": "application/json"}


def call(momor: Any, credential: str) -> str:
    answer = momor.post("/v1/chat/completions", CHAT, headers=bearer(credential))
    assert answer.status_code == 200, answer.text
    return answer.headers["X-Momor-Request-Id"]


def usage(momor: Any, credential: str, group: str = "key") -> dict[str, Any]:
    momor.settle()
    answer = httpx2.get(f"{momor.url}/usage?group={group}", headers=bearer(credential), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def shown(view: dict[str, Any]) -> set[str]:
    return {c["id"] for c in view["latest"]}


def org_item(org_id: str) -> organizations.Organization:
    item = aws.client("dynamodb").get_item(TableName=get_config().need("api_keys_table"), ConsistentRead=True,
                                           Key={"keyHash": {"S": organizations.org_key(org_id)}})["Item"]
    return organizations.from_item(item)


def me(momor: Any, token: str) -> dict[str, Any]:
    answer = httpx2.get(momor.url + "/me", headers=bearer(token), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_person_moved_to_another_organization_leaves_the_old_one(momor, cognito, capsys):
    from infra import organization as script

    a = cognito.organization("A", members_create_keys=True)
    b = cognito.organization("B")
    admin_a, admin_b = cognito.person(a, "admin"), cognito.person(b, "admin")
    mover = cognito.person(a, "member")
    made = httpx2.post(momor.url + "/keys", headers=bearer(mover.access_token), json={"name": "mover's"}, timeout=30)
    assert made.status_code == 201, made.text
    in_a = {call(momor, mover.access_token), call(momor, made.json()["key"])}
    momor.settle()
    capsys.readouterr()

    script.main(["add-member", b, "--sub", mover.sub])
    said = capsys.readouterr().err
    assert f"left {a}" in said and "revoked 1 key(s)" in said and made.json()["id"] in said
    assert mover.sub not in org_item(a).members and org_item(b).members[mover.sub] == "member"
    assert me(momor, mover.access_token)["organization"]["id"] == b
    in_b = call(momor, mover.access_token)
    # The key they made in A is A's: revoked with their leaving, it spends A's budget no more.
    assert momor.post("/v1/chat/completions", CHAT, headers=bearer(made.json()["key"])).status_code == 401

    a_view, b_view = usage(momor, admin_a.access_token), usage(momor, admin_b.access_token)
    assert shown(a_view) == in_a and a_view["records"] == 2  # their time in A, nothing after
    assert shown(b_view) == {in_b} and b_view["records"] == 1  # their time in B, nothing before
    by_person = usage(momor, admin_a.access_token, "person")["groups"]["person"]
    assert [(g["name"], g["calls"]) for g in by_person] == [(mover.sub, 2)]
    assert {c["id"] for c in usage(momor, mover.access_token)["latest"]} >= {in_b}  # their own calls stay theirs

    # Out of B too: they are in no organization (a member of the default one); B keeps what they did there.
    script.main(["remove-member", b, "--sub", mover.sub])
    assert "no longer in" in capsys.readouterr().err
    assert (me(momor, mover.access_token)["organization"]["id"], me(momor, mover.access_token)["role"]) == (
        organizations.DEFAULT_ORG, "member")
    assert mover.sub not in org_item(b).members
    call(momor, mover.access_token)
    assert shown(usage(momor, admin_b.access_token)) == {in_b}
    with pytest.raises(SystemExit):
        script.main(["remove-member", b, "--sub", mover.sub])


def test_a_person_back_in_an_organization_counts_there_for_both_of_their_times(momor, cognito):
    a, b = cognito.organization("A"), cognito.organization("B")
    admin_a = cognito.person(a, "admin")
    person = cognito.person(a, "member")
    first = call(momor, person.access_token)
    organizations.add_member(b, person.sub, "member")
    away = call(momor, person.access_token)
    organizations.add_member(a, person.sub, "admin")  # back, in another role
    back = call(momor, person.access_token)
    assert shown(usage(momor, admin_a.access_token)) == {first, back}
    assert len(org_item(a).former[person.sub]) == 1 and away  # one time in A that ended


def test_a_member_listed_before_joining_times_were_kept_counts_only_where_they_are(momor, cognito):
    """An organization's list from before this release may still name a person who has since been added
    elsewhere (the move did not take them out then): its admin reads none of their calls."""
    a, b = cognito.organization("A"), cognito.organization("B")
    admin_a, admin_b = cognito.person(a, "admin"), cognito.person(b, "admin")
    person = cognito.person(b, "member")
    aws.client("dynamodb").update_item(  # A's list as the old add_member left it: the person, no joining time
        TableName=get_config().need("api_keys_table"), Key={"keyHash": {"S": organizations.org_key(a)}},
        UpdateExpression="SET #m.#p = :r", ExpressionAttributeNames={"#m": "members", "#p": person.sub},
        ExpressionAttributeValues={":r": {"S": "member"}})
    organizations.reset_cache()
    theirs = call(momor, person.access_token)
    assert theirs not in shown(usage(momor, admin_a.access_token))
    assert theirs in shown(usage(momor, admin_b.access_token))
