"""Guardrails: checks an organization and a key require on a call's input and output (issue 39).

    policy.py        the `guardrails` object: parse, validate (400s), merge organization and key
    detectors/       one small pure function per kind of value (email, phone, card, iban, ssn, ip,
                     secret) and an organization's own regular expressions and deny-list
    screen.py        the input step, on the canonical call after parsing and before planning
    answer.py        the output step, on the answer's events before the dialect's writer
    placeholders.py  stable placeholders per call, and restoring them in the answer
    verdicts.py      what a record says (which check, where, how many spans; never a value)
    refusal.py       the errors each dialect writes (400, code guardrail_refused)

Imports only the canonical core (messages, call, events, errors), so the store (which reads stored
policies) and the flow (which runs them) both sit above it.
"""
