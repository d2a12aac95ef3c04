"""A Cognito user pool on the local emulator (moto_server): the pool, the console's app client, people
in it, and their sign-in, for infra/dev.sh and the tests (issue 26).

    pool = create_pool("http://127.0.0.1:5000")             # a user pool and a public app client
    sub = create_person(pool, "dev@momor.local", "Momor-dev-1", name="Dev Admin")
    token = sign_in(pool, "dev@momor.local", "Momor-dev-1").access_token
    os.environ.update(pool.env())                            # MOMOR_COGNITO_* for Momor to verify with

moto's Cognito issues RS256 tokens signed with one fixed key it publishes at
`<endpoint>/<pool id>/.well-known/jwks.json`, with the issuer a real pool would have
(`https://cognito-idp.<region>.amazonaws.com/<pool id>`), so Momor verifies them as it verifies
real ones, only fetching the key set from MOMOR_COGNITO_JWKS_URL. moto has no hosted sign-in page
(no /oauth2/authorize), so locally the console signs in with InitiateAuth USER_PASSWORD_AUTH, sent
from the browser straight to moto_server (which answers CORS for any origin, as Cognito's own
endpoint does); deployed, it uses the hosted page with the authorization-code flow and PKCE.

Sign-in names are e-mail addresses (`UsernameAttributes: email`, as the template's pool): moto
then puts the person's `sub` in the access token's `username`, which is what a real pool does.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

REGION = "us-east-1"
CLIENT_FLOWS = ["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
"""The app client's flows on the emulator: password sign-in (the console's local form, the tests)."""

DEV_EMAIL = "dev@momor.local"
DEV_PASSWORD = "Momor-dev-1"  # an in-memory emulator on 127.0.0.1 only; printed by infra/dev.sh
DEV_NAME = "Dev Admin"


@dataclass(frozen=True, slots=True)
class Pool:
    endpoint: str
    """The emulator's base URL (moto_server's)."""
    id: str
    client_id: str
    region: str = REGION

    def env(self) -> dict[str, str]:
        """The deployment settings Momor reads to verify this pool's tokens (config.py) and the
        console reads to sign in (GET /console/config)."""
        return {
            "MOMOR_COGNITO_USER_POOL_ID": self.id,
            "MOMOR_COGNITO_CLIENT_ID": self.client_id,
            "MOMOR_COGNITO_REGION": self.region,
            # Where Momor fetches the pool's keys (a real pool's are at its issuer's URL)...
            "MOMOR_COGNITO_JWKS_URL": f"{self.endpoint}/{self.id}/.well-known/jwks.json",
            # ... and where the console sends InitiateAuth (a real pool's region endpoint).
            "MOMOR_COGNITO_ENDPOINT": self.endpoint,
        }

    def client(self) -> Any:
        return _client(self.endpoint, self.region)


@dataclass(frozen=True, slots=True)
class Tokens:
    access_token: str
    id_token: str
    refresh_token: str
    expires_in: int


_clients: dict[tuple[str, str], Any] = {}


def _client(endpoint: str, region: str) -> Any:
    """A cognito-idp client for the emulator (dummy credentials: moto checks none), made once."""
    made = _clients.get((endpoint, region))
    if made is None:
        import boto3

        made = _clients[endpoint, region] = boto3.session.Session().client(
            "cognito-idp", endpoint_url=endpoint, region_name=region,
            aws_access_key_id="test", aws_secret_access_key="test")
    return made


def create_pool(endpoint: str, *, name: str = "momor-dev", region: str = REGION) -> Pool:
    """A user pool whose people sign in with their e-mail address, and a public app client (no
    secret: a browser cannot keep one) for the console."""
    cognito = _client(endpoint, region)
    pool = cognito.create_user_pool(
        PoolName=name,
        UsernameAttributes=["email"],
        AutoVerifiedAttributes=["email"],
        Schema=[{"Name": "name", "AttributeDataType": "String", "Mutable": True}],
    )["UserPool"]
    app = cognito.create_user_pool_client(
        UserPoolId=pool["Id"], ClientName="momor-console", GenerateSecret=False, ExplicitAuthFlows=CLIENT_FLOWS,
    )["UserPoolClient"]
    return Pool(endpoint=endpoint, id=pool["Id"], client_id=app["ClientId"], region=region)


def create_person(pool: Pool, email: str, password: str, *, name: str | None = None) -> str:
    """A confirmed person with a permanent password (no first-sign-in challenge); their `sub`."""
    cognito = pool.client()
    attributes = [{"Name": "email", "Value": email}, {"Name": "email_verified", "Value": "true"}]
    if name:
        attributes.append({"Name": "name", "Value": name})
    user = cognito.admin_create_user(UserPoolId=pool.id, Username=email, UserAttributes=attributes,
                                     MessageAction="SUPPRESS")["User"]
    cognito.admin_set_user_password(UserPoolId=pool.id, Username=email, Password=password, Permanent=True)
    return next(a["Value"] for a in user["Attributes"] if a["Name"] == "sub")


def sign_in(pool: Pool, email: str, password: str) -> Tokens:
    """InitiateAuth USER_PASSWORD_AUTH, as the console's local form sends it."""
    answer = pool.client().initiate_auth(
        ClientId=pool.client_id, AuthFlow="USER_PASSWORD_AUTH",
        AuthParameters={"USERNAME": email, "PASSWORD": password})["AuthenticationResult"]
    return Tokens(access_token=answer["AccessToken"], id_token=answer["IdToken"],
                  refresh_token=answer.get("RefreshToken", ""), expires_in=int(answer["ExpiresIn"]))


def disable_person(pool: Pool, email: str) -> None:
    pool.client().admin_disable_user(UserPoolId=pool.id, Username=email)


DEV_ORG_ID = "dev"
DEV_ORG_NAME = "Dev organization"


def provision_dev(endpoint: str, *, email: str = DEV_EMAIL, password: str = DEV_PASSWORD) -> Pool:
    """infra/dev.sh's sign-in: a pool and client on the emulator, the dev organization (whose
    members may create keys) and the dev person, its admin. Needs the MOMOR_* table variables set
    (the organization lives in the API-keys table, store/organizations.py)."""
    from momor.store import organizations

    pool = create_pool(endpoint)
    sub = create_person(pool, email, password, name=DEV_NAME)
    organizations.create(DEV_ORG_NAME, org_id=DEV_ORG_ID, members_create_keys=True)
    organizations.add_member(DEV_ORG_ID, sub, "admin", email=email)
    return pool


def main(argv: list[str] | None = None) -> None:
    """`python -m infra.cognito_dev --endpoint URL`: a pool, a client and the dev person on a running
    emulator; prints the MOMOR_COGNITO_* variables to export."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default=os.environ.get("AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER"),
                        required="AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER" not in os.environ)
    parser.add_argument("--email", default=DEV_EMAIL)
    parser.add_argument("--password", default=DEV_PASSWORD)
    args = parser.parse_args(argv)
    pool = create_pool(args.endpoint)
    sub = create_person(pool, args.email, args.password, name=DEV_NAME)
    for name, value in pool.env().items():
        print(f"export {name}={value}")
    print(f"# {args.email} (sub {sub}) signs in with the password given")


if __name__ == "__main__":
    main()
