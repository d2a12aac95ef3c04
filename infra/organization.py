"""Make an organization, or put a person in one: now `momor org ...` (shared/momor/cli/org.py).

    python -m infra.organization [--table TABLE] [--region REGION] COMMAND ...

Kept so the commands written before the `momor` CLI still work: every argument goes to
`momor org` as it is (create, add-member, remove-member, guardrails, and the newer list, show and
update). The module docstring of momor/cli/org.py says what each does.
"""

from __future__ import annotations

from momor import cli


def main(argv: list[str] | None = None) -> None:
    import sys

    code = cli.main(["org", *(sys.argv[1:] if argv is None else argv)])
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()
