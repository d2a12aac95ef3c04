"""Secrets: AWS access key ids, PEM private keys, and API keys in the formats their issuers publish
(OpenAI, Anthropic, GitHub, Slack, Google, Stripe, and Momor's own), each by its fixed prefix so
ordinary words are never taken."""

from __future__ import annotations

import re

from ..spans import Span

_SECRETS = re.compile("|".join((
    r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])",  # AWS access key ids
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|[\s\S]*)",
    r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}",  # Anthropic
    r"(?<![\w-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",  # OpenAI
    r"(?<!\w)gh[pousr]_[A-Za-z0-9]{36,}|(?<!\w)github_pat_[A-Za-z0-9_]{22,}",  # GitHub
    r"(?<![\w-])xox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
    r"(?<![\w-])AIza[0-9A-Za-z_-]{35}",  # Google
    r"(?<!\w)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    r"(?<![\w-])momor-[A-Za-z0-9_-]{40,}",  # Momor's own API keys
)))


def find(text: str) -> list[Span]:
    return [Span(m.start(), m.end(), "secret") for m in _SECRETS.finditer(text)]
