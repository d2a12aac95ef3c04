"""Words the fuzz suite's mutations draw on, shared by the OpenAI and Anthropic dialects."""

SELECTORS = ["gpt-5-mini", "claude-sonnet-4-5", "llama-3.3-70b", "mistral-small", "duo", "auto", "*", "tier/high",
             "tier/nope", "openai/gpt-5-mini", "anthropic/", "/", "", "no-such-model"]
PROVIDER_WORDS = ["openai", "anthropic", "flaky", "backup", "azure@eu", "nowhere", "@", "price", "latency",
                  "P6M", "P-1Y", "180.00:00:00", "PT", "true", "false"]
