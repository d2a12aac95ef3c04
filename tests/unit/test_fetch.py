"""Fetching a caller's file URL (momor/routing/fetch.py) against a local file server, with DNS
answered by a stand-in: every hop checked before it connects, the connection made to the address
the check saw (the name is never resolved twice), redirects bounded, size and time bounded.

tests/netguard.py resolves no name but loopback ones, so a fetch of `files.test` that works proves
the connection went to the checked address, not to a second lookup of the name.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from momor.config import reset_config
from momor.errors import RequestError
from momor.messages import File, ToolResultBody, ToolResultMessage, UserMessage
from momor.routing.fetch import MAX_REDIRECTS, check_file_urls, fetch_url
from tests.integration.fileserver import FileServer

BODY = b"%PDF-1.4 a small file"


class Resolver:
    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers, self.asked = answers, []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in self.answers:
            raise OSError("no such name")
        return self.answers[host]


@pytest.fixture
def files() -> Iterator[FileServer]:
    redirects = {"/hop": "http://files.test:{port}/a.pdf", "/to-other": "http://other.test:{port}/a.pdf",
                 "/to-loopback": "http://127.0.0.1:{port}/a.pdf", "/to-ftp": "ftp://files.test/a.pdf",
                 "/loop": "http://files.test:{port}/loop"}
    content = {"/a.pdf": (BODY, "application/pdf; charset=binary"), "/big": (b"x" * 5000, "text/plain"),
               "/big-unsized": (b"x" * 5000, "text/plain")}
    with FileServer(content, redirects, unsized=frozenset({"/big-unsized"})) as server:
        yield server


def allow(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MOMOR_FETCH_ALLOW", value)
    reset_config()


DNS = {"files.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}


async def fetch(url: str, resolve: Resolver, limit: int = 1000, timeout: float = 10) -> tuple[bytes, str | None]:
    return await fetch_url(url, "messages[0].files[0]", limit=limit, timeout=timeout, resolve=resolve)


async def refused(url: str, resolve: Resolver, status: int = 400, **kwargs) -> str:
    with pytest.raises(RequestError) as raised:
        await fetch(url, resolve, **kwargs)
    assert raised.value.status == status and raised.value.param == "messages[0].files[0]"
    return raised.value.detail


async def test_the_connection_goes_to_the_checked_address_with_the_name_as_host(files, monkeypatch):
    allow(monkeypatch, "files.test")
    resolve = Resolver(DNS)
    assert await fetch(f"http://files.test:{files.port}/a.pdf", resolve) == (BODY, "application/pdf")
    assert resolve.asked == ["files.test"]  # resolved once; a second lookup would fail under netguard
    assert files.hosts == [f"files.test:{files.port}"]


async def test_the_first_hop_is_checked_too(files, monkeypatch):
    allow(monkeypatch, "")
    detail = await refused(f"{files.url}/a.pdf", Resolver(DNS))
    assert "the file's address is refused" in detail and "non-public" in detail
    detail = await refused(f"http://files.test:{files.port}/a.pdf", Resolver(DNS))  # a name for loopback
    assert "non-public" in detail
    assert files.hits == []


@pytest.mark.parametrize("path", ["/to-other", "/to-loopback", "/to-ftp"])
async def test_each_redirect_is_checked_before_it_is_followed(files, monkeypatch, path):
    allow(monkeypatch, "files.test")  # the first host only
    detail = await refused(f"http://files.test:{files.port}{path}", Resolver(DNS))
    assert "redirects to an address that" in detail
    assert files.hits == [path]


async def test_an_allowed_redirect_is_followed_and_resolved_again(files, monkeypatch):
    allow(monkeypatch, "files.test,other.test")
    resolve = Resolver(DNS)
    assert (await fetch(f"http://other.test:{files.port}/hop", resolve))[0] == BODY
    assert resolve.asked == ["other.test", "files.test"] and files.hits == ["/hop", "/a.pdf"]


async def test_redirects_are_bounded(files, monkeypatch):
    allow(monkeypatch, "files.test")
    detail = await refused(f"http://files.test:{files.port}/loop", Resolver(DNS))
    assert f"more than {MAX_REDIRECTS} times" in detail
    assert files.hits == ["/loop"] * (MAX_REDIRECTS + 1)


@pytest.mark.parametrize("path", ["/big", "/big-unsized"])
async def test_a_body_past_the_limit_is_a_413(files, monkeypatch, path):
    allow(monkeypatch, "127.0.0.1")
    assert "larger than 1000 bytes" in await refused(f"{files.url}{path}", Resolver({}), status=413, limit=1000)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://files.test/a.pdf", "gopher://files.test/",
                                 "http:///a.pdf", "not a url"])
async def test_only_http_and_https_urls_with_a_host(url, monkeypatch):
    allow(monkeypatch, "files.test")
    resolve = Resolver(DNS)
    assert "http or https URL" in await refused(url, resolve)
    assert resolve.asked == []


async def test_a_server_that_never_answers_is_cut_off_by_the_time_limit(monkeypatch):
    allow(monkeypatch, "127.0.0.1")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections complete in the backlog; nothing ever answers
        detail = await refused(f"http://127.0.0.1:{silent.getsockname()[1]}/a.pdf", Resolver({}), timeout=0.5)
    assert "took longer than 0.5 s" in detail


def url_file(url: str) -> File:
    return File(type="url", value=url, name="a.pdf", contentType="application/pdf")


async def test_every_file_url_of_a_call_is_checked_up_front(monkeypatch):
    allow(monkeypatch, "")
    resolve = Resolver({"public.test": ["93.184.216.34"], "inside.test": ["10.0.0.7"]})
    fine = [UserMessage(value="a", files=[url_file("https://public.test/a.pdf"), url_file("https://gone.test/a.pdf")])]
    await check_file_urls(fine, resolve)  # a name that does not resolve is left for the fetch to refuse, if one comes
    assert resolve.asked == ["public.test", "gone.test"]
    result = ToolResultBody(id="t1", documents=[url_file("https://public.test/b.pdf"), url_file("http://inside.test/")])
    with pytest.raises(RequestError) as raised:
        await check_file_urls([*fine, ToolResultMessage(result=result)], resolve)
    assert raised.value.param == "messages[1].result.documents[1]" and "non-public" in raised.value.detail


def _certificates(tmp_path, name: str) -> tuple[str, str]:
    """A CA (its PEM path) and a server certificate for `name` it signed (cert and key in one PEM)."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def cert(subject: str, key, issuer: str, signer, ca: bool, san: str | None):
        now = dt.datetime.now(dt.UTC)
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(hours=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
                   # Python 3.13 verifies strictly (VERIFY_X509_STRICT): both key identifiers are needed.
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
                                  critical=False))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
                critical=True)
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(san)]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = cert("test CA", ca_key, "test CA", ca_key, True, None)
    leaf = cert(name, leaf_key, "test CA", ca_key, False, name)
    ca_path, leaf_path = tmp_path / "ca.pem", tmp_path / "leaf.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    leaf_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + leaf_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return str(ca_path), str(leaf_path)


@pytest.mark.parametrize("name", ["files.test", "other.test"])
async def test_tls_is_verified_for_the_name_in_the_url_not_the_pinned_address(files, monkeypatch, tmp_path, name):
    import ssl

    from momor.routing import fetch as fetch_module

    ca, leaf = _certificates(tmp_path, "files.test")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(leaf)
    files.server.socket = server_context.wrap_socket(files.server.socket, server_side=True)
    monkeypatch.setattr(fetch_module, "tls_context", lambda: ssl.create_default_context(cafile=ca))
    allow(monkeypatch, "files.test,other.test")
    url = f"https://{name}:{files.port}/a.pdf"
    if name == "files.test":  # the certificate's name: SNI and verification used it, though 127.0.0.1 was dialled
        assert (await fetch(url, Resolver(DNS)))[0] == BODY
        assert files.hosts == [f"files.test:{files.port}"]
    else:  # the same address under another name: the certificate does not match, nothing is read
        assert "could not be fetched (ConnectError)" in await refused(url, Resolver(DNS))
        assert files.hits == []
