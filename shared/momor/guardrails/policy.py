"""A guardrail policy: which checks run on a call's input and output, and what each does when it fires.

    {"input": [CHECK, ...], "output": [CHECK, ...], "unscreenedFiles"?: "refuse" | "allow"}
    CHECK = {"check": "pii" | "regex" | "denylist" | "comprehend" | "bedrock" | "moderation",
             "action": "mask" | "block" | "log" (moderation: block or log),
             "name"?: str (default: the check's kind), "restore"?: bool (input mask only),
             "entities"?: [pii entity, ...] (pii; default all) | [Comprehend type, ...] (comprehend),
             "patterns": [...] (regex), "words": [...] (denylist), "languageCode"?, "minScore"?
             (comprehend), "guardrailId", "guardrailVersion" (bedrock), "categories"?: [OpenAI
             moderation category, ...] (moderation; default: any it flags), "failure"?: "closed" | "open"
             (what a check a service answers does when it cannot run)}

Files: a file's text is screened once it is converted (fileProcessing), with the same checks and
placeholders as the rest of the call; a file that would reach a provider as it is (not converted)
under input checks that block or mask is refused with a 400 naming it, unless the policy says
`unscreenedFiles: allow` (log checks alone never refuse a file).

An organization's policy is the floor: a call runs its organization's checks, then its key's (`merged`),
so a key adds checks and can never take one of its organization's away. `parse` validates what the key
API and the organization script are given, with a 400 naming the field; a policy is stored as that
validated JSON (`to_json`). A moderation check is refused when written (`parse`) on a deployment
that names no moderation provider (MOMOR_GUARDRAIL_MODERATION_PROVIDER); one stored before the setting
was cleared is refused when a call runs it (api/guardrail_services.py), never silently skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import RequestError
from .detectors import FINDERS, Finder, denylist, pattern
from .spans import Span

CHECKS = ("pii", "regex", "denylist", "comprehend", "bedrock", "moderation")
REMOTE = ("comprehend", "bedrock", "moderation")
"""Checks a service answers (api/guardrail_services.py), whose `failure` says what a call does when it cannot."""
COMPREHEND_LANGUAGES = ("en", "es")
"""The languages DetectPiiEntities detects PII in (its model lists more codes; the service refuses them
with UnsupportedLanguageException)."""
COMPREHEND_TYPES = (
    "BANK_ACCOUNT_NUMBER", "BANK_ROUTING", "CREDIT_DEBIT_NUMBER", "CREDIT_DEBIT_CVV", "CREDIT_DEBIT_EXPIRY", "PIN",
    "EMAIL", "ADDRESS", "NAME", "PHONE", "SSN", "DATE_TIME", "PASSPORT_NUMBER", "DRIVER_ID", "URL", "AGE",
    "USERNAME", "PASSWORD", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "IP_ADDRESS", "MAC_ADDRESS", "LICENSE_PLATE",
    "VEHICLE_IDENTIFICATION_NUMBER", "UK_NATIONAL_INSURANCE_NUMBER", "CA_SOCIAL_INSURANCE_NUMBER",
    "US_INDIVIDUAL_TAX_IDENTIFICATION_NUMBER", "UK_UNIQUE_TAXPAYER_REFERENCE_NUMBER", "IN_PERMANENT_ACCOUNT_NUMBER",
    "IN_NREGA", "INTERNATIONAL_BANK_ACCOUNT_NUMBER", "SWIFT_CODE", "UK_NATIONAL_HEALTH_SERVICE_NUMBER",
    "CA_HEALTH_NUMBER", "IN_AADHAAR", "IN_VOTER_NUMBER")
"""DetectPiiEntities' entity types (botocore's service model for comprehend), ALL left out: no list is all."""
MODERATION_CATEGORIES = (
    "harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
    "self-harm", "self-harm/instructions", "self-harm/intent", "sexual", "sexual/minors", "violence",
    "violence/graphic")
"""The categories OpenAI's moderation models flag (the `Categories` of the openai package's moderation types)."""
ACTIONS = ("mask", "block", "log")
DIRECTIONS = ("input", "output")
UNSCREENED_FILES = ("refuse", "allow")
"""What a policy does with a file no input check can read (one sent as it is, not converted)."""
FIELDS = {"check", "action", "name", "restore", "entities", "patterns", "words", "failure", "languageCode",
          "minScore", "guardrailId", "guardrailVersion", "categories"}
_GUARDRAIL_ID = re.compile(r"[a-z0-9]+|arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail/[a-z0-9]+")
_GUARDRAIL_VERSION = re.compile(r"[1-9][0-9]{0,7}|DRAFT")
"""ApplyGuardrail's identifier and version patterns (botocore's bedrock-runtime model)."""
MAX_CHECKS = 20
MAX_PATTERNS = 20
MAX_PATTERN_CHARS = 500
MAX_WORDS = 500
MAX_WORD_CHARS = 100
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    """What verdicts and refusals call it (never the text it matched)."""
    check: str
    action: str
    origin: str = "key"
    """Whose policy it comes from: `organization` or `key`."""
    restore: bool = False
    entities: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    failure: str = "closed"
    language: str = "en"
    """comprehend: the text's language, as Comprehend names it."""
    min_score: float = 0.5
    """comprehend: the least confidence an entity is taken at."""
    guardrail_id: str = ""
    guardrail_version: str = ""
    """bedrock: the Bedrock guardrail applied, and its version."""
    categories: tuple[str, ...] = ()
    """moderation: the categories it acts on (empty: any the model flags)."""
    finder: Finder = field(default=lambda text: [], compare=False, repr=False)

    @property
    def remote(self) -> bool:
        """A service answers this check (api/guardrail_services.py), not a local detector."""
        return self.check in REMOTE

    def find(self, text: str) -> list[Span]:
        return self.finder(text) if text else []

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "check": self.check, "action": self.action}
        if self.action == "mask":
            out["restore"] = self.restore
        if self.check == "pii":
            out["entities"] = list(self.entities)
        if self.check == "regex":
            out["patterns"] = list(self.patterns)
        if self.check == "denylist":
            out["words"] = list(self.words)
        if self.check == "comprehend":
            out |= {"entities": list(self.entities), "languageCode": self.language, "minScore": self.min_score}
        if self.check == "bedrock":
            out |= {"guardrailId": self.guardrail_id, "guardrailVersion": self.guardrail_version}
        if self.check == "moderation" and self.categories:
            out["categories"] = list(self.categories)
        out["failure"] = self.failure
        return out


@dataclass(frozen=True, slots=True)
class Policy:
    input: tuple[Check, ...] = ()
    output: tuple[Check, ...] = ()
    unscreened_files: str = "refuse"
    """`allow`: a file sent as it is (its text unread by the input checks) goes on; `refuse`: a 400."""

    def __bool__(self) -> bool:
        return bool(self.input or self.output)

    @property
    def screens_files(self) -> bool:
        """Files sent as they are are refused: input checks that block or mask, and no `allow`."""
        return self.unscreened_files != "allow" and any(c.action in ("mask", "block") for c in self.input)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"input": [c.to_json() for c in self.input], "output": [c.to_json() for c in self.output]}
        if self.unscreened_files != "refuse":
            out["unscreenedFiles"] = self.unscreened_files
        return out


NONE = Policy()


def merged(org: Policy | None, key: Policy | None) -> Policy:
    """The policy a call runs: its organization's checks first (the floor), then its key's."""
    org, key = org or NONE, key or NONE
    if not key:
        return org
    if not org:
        return key
    # a file goes unscreened only where each side whose checks it would escape allows it
    allowed = all(p.unscreened_files == "allow" for p in (org, key) if p.screens_files or p.unscreened_files == "allow")
    return Policy(org.input + key.input, org.output + key.output, "allow" if allowed else "refuse")


def parse(value: Any, *, origin: str, where: str = "guardrails", stored: bool = False) -> Policy:
    """A policy as written (a JSON object, or None for none), validated; RequestError (400) naming
    the field otherwise. `stored`: read back from the store, where what the deployment offers (a
    moderation provider) is checked when a call runs it, not when the caller is read."""
    if value is None:
        return NONE
    if not isinstance(value, dict):
        raise _bad(where, "must be an object with `input` and/or `output` lists of checks")
    unknown = set(value) - {*DIRECTIONS, "unscreenedFiles"}
    if unknown:
        raise _bad(f"{where}.{sorted(unknown)[0]}", "is not a guardrails field (input, output, unscreenedFiles)")
    unscreened = value.get("unscreenedFiles", "refuse")
    if unscreened not in UNSCREENED_FILES:
        raise _bad(f"{where}.unscreenedFiles", "must be refuse or allow")
    lists: dict[str, tuple[Check, ...]] = {}
    for direction in DIRECTIONS:
        checks = value.get(direction, [])
        at = f"{where}.{direction}"
        if not isinstance(checks, list):
            raise _bad(at, "must be a list of checks")
        if len(checks) > MAX_CHECKS:
            raise _bad(at, f"has more than {MAX_CHECKS} checks")
        parsed = [_check(c, f"{at}[{i}]", direction, origin, stored) for i, c in enumerate(checks)]
        lists[direction] = tuple(_unique_names(parsed))
    return Policy(lists["input"], lists["output"], unscreened)


def from_text(text: str | None, *, origin: str) -> Policy:
    """A stored policy (validated when it was written)."""
    return parse(json.loads(text), origin=origin, stored=True) if text else NONE


def _check(value: Any, at: str, direction: str, origin: str, stored: bool = False) -> Check:
    if not isinstance(value, dict):
        raise _bad(at, "must be an object such as {\"check\": \"pii\", \"action\": \"mask\"}")
    unknown = set(value) - FIELDS
    if unknown:
        raise _bad(f"{at}.{sorted(unknown)[0]}", "is not a check field")
    kind, action, name, restore, failure = _common(value, at, direction)
    for only, owners in (("entities", ("pii", "comprehend")), ("patterns", ("regex",)), ("words", ("denylist",)),
                         ("languageCode", ("comprehend",)), ("minScore", ("comprehend",)),
                         ("guardrailId", ("bedrock",)), ("guardrailVersion", ("bedrock",)),
                         ("categories", ("moderation",))):
        if only in value and kind not in owners:
            raise _bad(f"{at}.{only}", f"applies only to a {' or '.join(owners)} check")
    base = {"name": name, "check": kind, "action": action, "origin": origin, "restore": restore, "failure": failure}
    if kind == "moderation":
        return _moderation(value, at, base, stored)
    return _detector(value, at, kind, base)


def _common(value: dict[str, Any], at: str, direction: str) -> tuple[str, str, str, bool, str]:
    """The fields every check has: (check, action, name, restore, failure)."""
    kind = value.get("check")
    if kind not in CHECKS:
        raise _bad(f"{at}.check", f"must be one of {', '.join(CHECKS)}")
    action = value.get("action")
    if action not in ACTIONS:
        raise _bad(f"{at}.action", f"must be one of {', '.join(ACTIONS)}")
    name = value.get("name", kind)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _bad(f"{at}.name", "must be 1-64 letters, digits, '_', '.' or '-'")
    restore = value.get("restore", False)
    if not isinstance(restore, bool):
        raise _bad(f"{at}.restore", "must be true or false")
    if restore and (action != "mask" or direction != "input"):
        raise _bad(f"{at}.restore", "applies only to an input check whose action is mask")
    failure = value.get("failure", "closed")
    if failure not in ("closed", "open"):
        raise _bad(f"{at}.failure", "must be closed or open")
    return kind, action, name, restore, failure


def _detector(value: dict[str, Any], at: str, kind: str, base: dict[str, Any]) -> Check:
    """The check with its detector, from the fields of its kind."""
    if kind == "pii":
        entities = _strings(value.get("entities", list(FINDERS)), f"{at}.entities", 1, len(FINDERS), 16)
        wrong = [e for e in entities if e not in FINDERS]
        if wrong:
            raise _bad(f"{at}.entities", f"{wrong[0]!r} is not one of {', '.join(FINDERS)}")
        ordered = tuple(e for e in FINDERS if e in entities)  # run in FINDERS' order, whatever was written
        return Check(**base, entities=ordered, finder=_pii_finder(ordered))
    if kind == "comprehend":
        return _comprehend(value, at, base)
    if kind == "bedrock":
        if base["restore"]:
            raise _bad(f"{at}.restore", "does not apply to a bedrock check (its matches are masked, not kept)")
        ident, version = value.get("guardrailId"), value.get("guardrailVersion")
        if not isinstance(ident, str) or not _GUARDRAIL_ID.fullmatch(ident):
            raise _bad(f"{at}.guardrailId", "must be a Bedrock guardrail's id or ARN")
        if not isinstance(version, str) or not _GUARDRAIL_VERSION.fullmatch(version):
            raise _bad(f"{at}.guardrailVersion", "must be a version number as a string, or DRAFT")
        return Check(**base, guardrail_id=ident, guardrail_version=version)
    if kind == "regex":
        patterns = _strings(value.get("patterns"), f"{at}.patterns", 1, MAX_PATTERNS, MAX_PATTERN_CHARS)
        try:
            made = pattern.finder(patterns)
        except re.error as exc:
            raise _bad(f"{at}.patterns", f"holds a pattern that is not a regular expression ({exc})") from None
        return Check(**base, patterns=tuple(patterns), finder=made)
    words = _strings(value.get("words"), f"{at}.words", 1, MAX_WORDS, MAX_WORD_CHARS)
    if not all(w.strip() for w in words):
        raise _bad(f"{at}.words", "holds an empty word")
    return Check(**base, words=tuple(words), finder=denylist.finder(words))


def _moderation(value: dict[str, Any], at: str, base: dict[str, Any], stored: bool) -> Check:
    """OpenAI's moderation endpoint flags a whole text, not a span of it: nothing to mask."""
    if base["action"] == "mask":
        raise _bad(f"{at}.action", "must be block or log for a moderation check (it flags a whole text, "
                   "there is no span to mask)")
    categories: tuple[str, ...] = ()
    if "categories" in value:
        written = _strings(value["categories"], f"{at}.categories", 1, len(MODERATION_CATEGORIES), 64)
        wrong = [c for c in written if c not in MODERATION_CATEGORIES]
        if wrong:
            raise _bad(f"{at}.categories", f"{wrong[0]!r} is not one of {', '.join(MODERATION_CATEGORIES)}")
        categories = tuple(c for c in MODERATION_CATEGORIES if c in written)
    if not stored and not moderation_provider():
        raise _bad(f"{at}.check", "'moderation' is not available in this deployment: it names no moderation "
                   "provider (MOMOR_GUARDRAIL_MODERATION_PROVIDER)")
    return Check(**base, categories=categories)


def moderation_provider() -> str:
    """The catalog provider the moderation check asks, or empty (config.py's setting: read here, late,
    so this module stays below the configuration's other readers)."""
    from ..config import get_config

    return get_config().guardrail_moderation_provider


def _comprehend(value: dict[str, Any], at: str, base: dict[str, Any]) -> Check:
    types = _strings(value.get("entities", list(COMPREHEND_TYPES)), f"{at}.entities", 1, len(COMPREHEND_TYPES), 64)
    wrong = [t for t in types if t not in COMPREHEND_TYPES]
    if wrong:
        raise _bad(f"{at}.entities", f"{wrong[0]!r} is not one of Comprehend's PII entity types")
    language = value.get("languageCode", "en")
    if language not in COMPREHEND_LANGUAGES:
        raise _bad(f"{at}.languageCode", f"must be one of {', '.join(COMPREHEND_LANGUAGES)}")
    score = value.get("minScore", 0.5)
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise _bad(f"{at}.minScore", "must be a number from 0 to 1")
    return Check(**base, entities=tuple(t for t in COMPREHEND_TYPES if t in types), language=language,
                 min_score=float(score))


def _pii_finder(entities: tuple[str, ...]) -> Finder:
    finders = [FINDERS[e] for e in entities]

    def find(text: str) -> list[Span]:
        return [span for f in finders for span in f(text)]

    return find


def _strings(value: Any, at: str, least: int, most: int, chars: int) -> list[str]:
    if not isinstance(value, list) or not least <= len(value) <= most:
        raise _bad(at, f"must be a list of {least} to {most} strings")
    if not all(isinstance(v, str) and 0 < len(v) <= chars for v in value):
        raise _bad(at, f"must hold only non-empty strings of at most {chars} characters")
    return value


def _unique_names(checks: list[Check]) -> list[Check]:
    """Two checks of one list never share a name (`regex`, `regex-2`): a verdict names one check."""
    seen: dict[str, int] = {}
    out = []
    for c in checks:
        count = seen.get(c.name, 0) + 1
        seen[c.name] = count
        out.append(c if count == 1 else _renamed(c, f"{c.name}-{count}"))
    return out


def _renamed(check: Check, name: str) -> Check:
    fields = {f: getattr(check, f) for f in Check.__slots__}  # type: ignore[attr-defined]
    return Check(**{**fields, "name": name})


def _bad(at: str, problem: str) -> RequestError:
    return RequestError(f"{at} {problem}.", param=at)
