"""The `momor keys` governance flags as the key API's body (cli/governance.py): what each flag sends,
`none` as null, what a flag left out leaves out. The values themselves are the API's to check
(tests/integration/test_cli.py runs the installed command against it)."""

from __future__ import annotations

import pytest

from momor.cli import governance, parser


def body(*argv: str) -> dict:
    return governance.body(parser().parse_args(["keys", "update", "k1", *argv]))


def test_a_flag_left_out_is_left_out_of_the_body():
    assert body() == {}
    assert body("--no-zdr") == {"limits": {"zdr": False}}


def test_none_sends_null_for_a_limit_a_list_budgets_an_expiry_and_guardrails():
    assert body("--daily-usd", "none", "--allow-provider", "none", "--budget-model", "none", "--expires-at", "none",
                "--guardrails", "none") == {"limits": {"budgetDailyUsd": None}, "allow": {"providers": None},
                                            "budgets": {"byModel": None}, "expiresAt": None, "guardrails": None}


def test_budgets_of_one_name_merge_and_numbers_go_as_numbers_the_rest_as_written():
    sent = body("--budget-model", "claude-opus-4=50/month", "--budget-model", "claude-opus-4=5/day",
                "--budget-provider", "openai=2.5/daily", "--tokens-per-minute", "1000", "--monthly-usd", "lots",
                "--max-cost-per-call-usd", "inf", "--allow-model", "openai/*", "--allow-model", "tier/low")
    assert sent == {"limits": {"tokensPerMinute": 1000, "budgetMonthlyUsd": "lots", "maxCostPerCallUsd": "inf"},
                    "allow": {"models": ["openai/*", "tier/low"]},
                    "budgets": {"byModel": {"claude-opus-4": {"monthlyUsd": 50, "dailyUsd": 5}},
                                "byProvider": {"openai": {"dailyUsd": 2.5}}}}


def test_an_expiry_from_now_is_sent_as_a_time_with_its_offset():
    sent = body("--expires-at", "+7d")["expiresAt"]
    assert sent.endswith("Z") and "T" in sent


@pytest.mark.parametrize("flag", ["opus", "opus=50", "opus=50/week", "=5/day"])
def test_a_budget_not_written_name_usd_period_is_a_usage_error(flag, capsys):
    with pytest.raises(SystemExit) as done:
        body("--budget-model", flag)
    assert done.value.code == 2 and "NAME=USD/day" in capsys.readouterr().err
