"""Signed-in people for tests (issue 26): a user pool on the session's moto_server, organizations in
the test's own API-keys table, and people who sign in with InitiateAuth as the console does.

    def test_something(dev_user):            # the dev admin, signed in: dev_user.access_token
    def test_other(cognito):                 # the pool, with MOMOR_COGNITO_* set for this test
        alice = cognito.person(org_id, "member")
        bob_org = cognito.organization("Bob's")

Fixtures are registered for every test folder by tests/conftest.py. The pool is made once per
session (moto keeps it in memory); each person gets an address of their own, so tests never share
one. Tokens are real RS256 tokens from moto, verified by Momor against the key set moto publishes.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from infra import cognito_dev
from infra.cognito_dev import Pool
from infra.emulators import Endpoints

PASSWORD = "Momor-test-1"


@dataclass(frozen=True, slots=True)
class Person:
    email: str
    password: str
    sub: str
    org_id: str
    role: str
    access_token: str

    @property
    def caller_id(self) -> str:
        """The id Momor records a signed-in person's calls under (api/auth.py PERSON_PREFIX)."""
        return "p-" + self.sub


@dataclass
class Cognito:
    pool: Pool

    def organization(self, name: str, *, members_create_keys: bool = False) -> str:
        """A new organization in this test's table; its id."""
        from momor.store import organizations

        return organizations.create(name, members_create_keys=members_create_keys).id

    def person(self, org_id: str, role: str = "member", *, name: str | None = None) -> Person:
        """A person of `org_id` with `role`, signed in."""
        from momor.store import organizations

        email = f"{(name or role).lower().replace(' ', '-')}-{secrets.token_hex(4)}@momor.test"
        sub = cognito_dev.create_person(self.pool, email, PASSWORD, name=name)
        organizations.add_member(org_id, sub, role, email=email)
        token = cognito_dev.sign_in(self.pool, email, PASSWORD).access_token
        return Person(email, PASSWORD, sub, org_id, role, token)


@pytest.fixture(scope="session")
def cognito_pool(aws: Endpoints) -> Pool:
    return cognito_dev.create_pool(aws.moto, name="momor-tests")


@pytest.fixture
def cognito(momor_aws: object, cognito_pool: Pool, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cognito]:
    """The session's pool, with this test's Momor configured to accept its tokens."""
    from tests.conftest import reset_momor_caches

    for name, value in cognito_pool.env().items():
        monkeypatch.setenv(name, value)
    reset_momor_caches()
    yield Cognito(cognito_pool)
    reset_momor_caches()


@pytest.fixture
def dev_user(cognito: Cognito) -> Person:
    """infra/dev.sh's dev person: the admin of a dev organization whose members may create keys."""
    org_id = cognito.organization(cognito_dev.DEV_ORG_NAME, members_create_keys=True)
    return cognito.person(org_id, "admin", name=cognito_dev.DEV_NAME)
