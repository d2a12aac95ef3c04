"""The built-in guardrail detectors, each on its own: what it takes, and the look-alikes it leaves
(a Luhn-failing run of digits, an IBAN with a wrong checksum, an SSN the SSA never issues, an octet
past 255, a version number), so a policy masks values and not the text around them."""

from __future__ import annotations

import pytest

from momor.guardrails.detectors import card, denylist, email, iban, ip, pattern, phone, secret, ssn


def found(find, text: str) -> list[str]:
    return [text[s.start:s.end] for s in find(text)]


def test_email():
    assert found(email.find, "write to jane.doe+x@mail.example.co.uk, or bob@ex.io.") == [
        "jane.doe+x@mail.example.co.uk", "bob@ex.io"]
    assert found(email.find, "no @ here, and user@localhost is not an address, nor a@b.c") == []


@pytest.mark.parametrize("number", ["4111 1111 1111 1111", "4111-1111-1111-1111", "5500005555555559",
                                    "378282246310005"])
def test_card_luhn_valid(number):
    assert found(card.find, f"card {number} please") == [number]


def test_card_luhn_invalid_and_other_digits_are_left():
    assert found(card.find, "order 4111 1111 1111 1112, id 1234567890123, zeros 0000000000000") == []
    assert card.luhn("79927398713") and not card.luhn("79927398710")


def test_iban_checksum():
    assert found(iban.find, "pay GB82 WEST 1234 5698 7654 32 now") == ["GB82 WEST 1234 5698 7654 32"]
    assert found(iban.find, "or DE89370400440532013000.") == ["DE89370400440532013000"]
    assert found(iban.find, "not GB83 WEST 1234 5698 7654 32 (checksum off)") == []


def test_ssn_rules():
    assert found(ssn.find, "SSN 123-45-6789 and 123 45 6789") == ["123-45-6789", "123 45 6789"]
    assert found(ssn.find, "000-12-3456 666-12-3456 912-12-3456 123-00-4567 123-45-0000 123-45 6789") == []


def test_ip_v4_and_v6():
    assert found(ip.find, "hosts 192.168.10.20, 8.8.8.8 and fe80::1 or 2001:db8::ff00:42:8329") == [
        "192.168.10.20", "8.8.8.8", "fe80::1", "2001:db8::ff00:42:8329"]
    assert found(ip.find, "version 1.2.3, 300.1.1.1, 1.2.3.4.5, time 12:30") == []


def test_phone():
    text = "call +1 415-555-0100, (020) 7946 0958 or +442079460958"
    assert found(phone.find, text) == ["+1 415-555-0100", "(020) 7946 0958", "+442079460958"]
    # a card number in groups is the card detector's, an SSN the SSN detector's, a short number nothing's
    assert found(phone.find, "4111 1111 1111 1111 and 123-45-6789 and 555-0100 and 2024-01-15") == []


def test_secrets():
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"
    keys = ["AKIAIOSFODNN7EXAMPLE", "sk-proj-" + "a1" * 20, "sk-ant-api03-" + "B2" * 20, "ghp_" + "c" * 36,
            "xoxb-1234567890-abcdef", "AIza" + "D" * 35, "sk_live_" + "e" * 24, "momor-" + "f" * 43, pem]
    text = " and ".join(keys)
    assert found(secret.find, text) == keys
    assert found(secret.find, "ask-me, sk-short, AKIA123, github") == []


def test_regex_and_denylist():
    find = pattern.finder([r"PRJ-\d{4}", r"x*"])  # a pattern that matches empty text finds nothing there
    assert found(find, "tickets PRJ-1234 and PRJ-99") == ["PRJ-1234"]
    words = denylist.finder(["Project Falcon", "falcon", "class"])
    assert found(words, "project falcon, FALCON, classic, class.") == ["project falcon", "FALCON", "class"]
