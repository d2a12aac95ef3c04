"""infra/dev.sh's sign-in (issue 26): `python -m infra.local` makes a user pool on moto's Cognito, a dev
organization and its admin, and prints how to sign in; following what it prints (the console's own
steps: GET /console/config, then InitiateAuth at the endpoint it names) signs the dev person in,
and their token calls Momor on behalf of the dev organization."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import httpx2
import pytest

pytestmark = pytest.mark.emulators

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dev_server(aws):
    """infra.local as dev.sh runs it, on free ports, with the session's emulators as its AWS; yields
    (its URL, what it printed)."""
    port, fake_port = _free_port(), _free_port()
    env = {**os.environ, **aws.env()}
    for name in [n for n in env if n.startswith("MOMOR_")]:
        env.pop(name)
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([sys.executable, "-m", "infra.local", "--port", str(port), "--fake-port",
                                 str(fake_port)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    if httpx2.get(url + "/console/config", timeout=1).status_code == 200:
                        break
                except httpx2.TransportError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, "infra.local did not start"
                time.sleep(0.2)
            out.seek(0)
            yield url, out.read()
        finally:
            proc.terminate()
            proc.wait(15)


def test_dev_sh_prints_a_sign_in_that_works(dev_server):
    url, printed = dev_server
    said = re.search(r"sign in as (\S+) with the password (\S+) \(admin of 'Dev organization'\)", printed)
    assert said, printed
    email, password = said.groups()
    assert f"Console: {url}/console" in printed

    # The console's steps: how to sign in, then InitiateAuth at the user-pool emulator.
    cognito = httpx2.get(url + "/console/config").json()["cognito"]
    assert cognito["flow"] == "password"
    answer = httpx2.post(cognito["endpoint"] + "/", json={
        "AuthFlow": "USER_PASSWORD_AUTH", "ClientId": cognito["clientId"],
        "AuthParameters": {"USERNAME": email, "PASSWORD": password}}, headers={
        "Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "AWSCognitoIdentityProviderService.InitiateAuth"})
    assert answer.status_code == 200, answer.text
    token = answer.json()["AuthenticationResult"]["AccessToken"]
    bearer = {"Authorization": f"Bearer {token}"}

    me = httpx2.get(url + "/me", headers=bearer).json()
    assert me["email"] == email and me["role"] == "admin" and me["organization"]["name"] == "Dev organization"
    call = httpx2.post(url + "/models", headers=bearer, timeout=30, json={
        "systemPrompt": "", "messages": [{"type": "user", "value": "Hello"}], "model": "tier/low"})
    assert call.status_code == 200, call.text
    # The dev person may make keys in the console from the start.
    made = httpx2.post(url + "/keys", headers=bearer, json={"name": "first"})
    assert made.status_code == 201 and made.json()["key"]


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_serving_beyond_loopback_warns_that_anyone_can_forge_a_sign_in(aws, monkeypatch, capsys, host, warned):
    """infra.local itself (in this process, its server not started): --host beyond loopback prints the
    warning before it serves (issue 33), loopback does not."""
    import uvicorn

    from infra import local
    from tests.conftest import reset_momor_caches

    served: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(options["host"]))
    with mock.patch.dict(os.environ, aws.env()):  # what main sets in the environment goes after it
        for name in [n for n in os.environ if n.startswith("MOMOR_")]:
            os.environ.pop(name)
        try:
            local.main(["--host", host, "--no-fake-providers", "--port", str(_free_port())])
        finally:
            reset_momor_caches()
    said = capsys.readouterr()
    assert served == [host]
    assert ("moto's Cognito signs sign-in tokens with a private key published" in said.err) is warned
    assert ("forge a sign-in" in said.err) is warned
