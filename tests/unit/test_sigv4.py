"""Momor's own SigV4 (store/sigv4.py) against botocore's signer: the same request signed both ways at the
same instant must carry the same headers, Authorization included, for each request Momor signs itself
(DynamoDB's JSON protocol, S3 GetObject with and without If-None-Match, Secrets Manager), with and
without a session token, on AWS's endpoints and on local ones with a port. And the credentials: the
environment's first, botocore's chain otherwise."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from momor.store import aws, aws_session, sigv4

NOW = dt.datetime(2026, 11, 30, 17, 5, 9, tzinfo=dt.UTC)

REQUESTS = [
    ("dynamodb", "POST", "https://dynamodb.eu-west-1.amazonaws.com/",
     {"X-Amz-Target": "DynamoDB_20120810.PutItem", "Content-Type": "application/x-amz-json-1.0"},
     b'{"TableName":"t","Item":{"id":{"S":"x"}}}'),
    ("dynamodb", "POST", "http://127.0.0.1:8000/",
     {"X-Amz-Target": "DynamoDB_20120810.GetItem", "Content-Type": "application/x-amz-json-1.0"}, b"{}"),
    ("secretsmanager", "POST", "https://secretsmanager.eu-west-1.amazonaws.com/",
     {"X-Amz-Target": "secretsmanager.GetSecretValue", "Content-Type": "application/x-amz-json-1.1"},
     b'{"SecretId": "momor/keys"}'),
    ("s3", "GET", "https://bucket.s3.eu-west-1.amazonaws.com/catalog.json", {}, b""),
    ("s3", "GET", "https://s3.eu-west-1.amazonaws.com/dotted.bucket/dir/a%20b%2Bc~%C3%A9.json",
     {"If-None-Match": '"0a1b2c"'}, b""),
    ("s3", "GET", "http://localhost:5000/bucket/catalog.json?versionId=3&acl", {}, b""),
]


def _botocore(service, method, url, headers, body, credentials):
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
    signer = (S3SigV4Auth if service == "s3" else SigV4Auth)(credentials, service, "eu-west-1")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("botocore.auth.get_current_datetime", lambda: NOW.replace(tzinfo=None))
        signer.add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize("token", [None, "IQoJb3JpZ2luX2VjE//token+with/slashes="])
@pytest.mark.parametrize("service, method, url, headers, body", REQUESTS)
def test_the_same_signature_as_botocore(service, method, url, headers, body, token):
    ours = sigv4.sign(method, url, headers, body, service=service, region="eu-west-1", now=NOW,
                      credentials=sigv4.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token))
    theirs = _botocore(service, method, url, headers, body,
                       BotoCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token))
    assert ours == theirs
    assert ours["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261130/eu-west-1/{service}/")


def test_a_changed_byte_changes_the_signature():
    args = dict(service="dynamodb", region="eu-west-1", now=NOW, credentials=sigv4.Credentials("A", "S", None))
    one = sigv4.sign("POST", "https://dynamodb.eu-west-1.amazonaws.com/", {"X-Amz-Target": "x"}, b"{}", **args)
    two = sigv4.sign("POST", "https://dynamodb.eu-west-1.amazonaws.com/", {"X-Amz-Target": "x"}, b"{ }", **args)
    assert one["Authorization"] != two["Authorization"]


def test_user_agent_and_trace_headers_are_not_signed():
    signed = sigv4.sign("POST", "https://dynamodb.eu-west-1.amazonaws.com/",
                        {"User-Agent": "momor", "X-Amzn-Trace-Id": "Root=1", "Content-Type": "a"}, b"",
                        service="dynamodb", region="eu-west-1", now=NOW, credentials=sigv4.Credentials("A", "S", None))
    assert "SignedHeaders=content-type;host;x-amz-date," in signed["Authorization"]


# --- credentials -----------------------------------------------------------------------------------


def test_the_environments_credentials_come_first(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-env")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "token-env")
    aws.reset_clients()
    assert aws_session.credentials() == sigv4.Credentials("AKIDENV", "secret-env", "token-env")
    assert aws_session._session is None, "no botocore session is made for them"


def test_without_them_botocores_chain_answers(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    shared = tmp_path / "credentials"
    shared.write_text("[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = secret-file\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(shared))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    aws.reset_clients()
    try:
        assert aws_session.credentials() == sigv4.Credentials("AKIDFILE", "secret-file", None)
    finally:
        aws.reset_clients()


def test_signing_with_the_environments_credentials_imports_no_botocore():
    code = ("import os, sys; os.environ.update(AWS_ACCESS_KEY_ID='A', AWS_SECRET_ACCESS_KEY='S', "
            "AWS_DEFAULT_REGION='eu-west-1', AWS_ENDPOINT_URL_DYNAMODB='http://127.0.0.1:9'); "
            "from momor.store import dynamo; dynamo._current().headers('GetItem', b'{}'); "
            "print(sorted(m for m in sys.modules if m.startswith('botocore')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
