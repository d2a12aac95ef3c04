"""Token log probabilities read from each wire's shape (providers/logprobs.py)."""

from __future__ import annotations

from momor.events import TokenLogprob
from momor.providers.logprobs import from_google, from_openai


def test_openai_tokens_with_their_alternatives_and_malformed_entries_passed_over():
    items = [
        {"token": "Hi", "logprob": -0.5, "bytes": [72, 105],
         "top_logprobs": [{"token": "Hi", "logprob": -0.5, "bytes": [72, 105]}, {"token": "Yo", "logprob": -2}]},
        {"token": "!", "logprob": None},  # no number: not a token Momor can report
        "garbage",
        {"token": " there", "logprob": -1, "bytes": None, "top_logprobs": [{"logprob": -3}]},
    ]
    assert from_openai(items) == (
        TokenLogprob("Hi", -0.5, (72, 105), (TokenLogprob("Hi", -0.5, (72, 105)), TokenLogprob("Yo", -2.0))),
        TokenLogprob(" there", -1.0),
    )
    assert from_openai(None) == () and from_openai({"content": []}) == ()


def test_google_chosen_tokens_beside_their_steps_top_candidates():
    result = {
        "chosenCandidates": [{"token": "Hi", "tokenId": 1, "logProbability": -0.25}, {"token": "!", "tokenId": 2}],
        "topCandidates": [{"candidates": [{"token": "Hi", "logProbability": -0.25},
                                          {"token": "Yo", "logProbability": -1.5}]}],
        "logProbabilitySum": -0.25,
    }
    # A token Google reports without a logProbability is certain (proto3 leaves a zero out); a step
    # without top candidates has none.
    assert from_google(result) == (
        TokenLogprob("Hi", -0.25, None, (TokenLogprob("Hi", -0.25), TokenLogprob("Yo", -1.5))),
        TokenLogprob("!", 0.0),
    )
    assert from_google({"topCandidates": []}) == () and from_google("x") == ()
