"""The context object a handler receives, built as the stock Python runtime builds it.

Function-wide values come from the environment Lambda sets (AWS_LAMBDA_FUNCTION_NAME and friends);
per-invocation values come from the /next headers. Mangum puts it in the scope as `aws.context`, and
Powertools reads `aws_request_id`, `function_name`, `memory_limit_in_mb` and `invoked_function_arn`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from momor.lambda_stream.runtime_api import Invocation


class CognitoIdentity:
    """Lambda-Runtime-Cognito-Identity, for mobile-SDK callers."""

    __slots__ = ("cognito_identity_id", "cognito_identity_pool_id")

    def __init__(self, data: dict[str, Any]) -> None:
        self.cognito_identity_id = data.get("cognitoIdentityId")
        self.cognito_identity_pool_id = data.get("cognitoIdentityPoolId")


class ClientContext:
    """Lambda-Runtime-Client-Context, for mobile-SDK callers: client, custom and env mappings."""

    __slots__ = ("client", "custom", "env")

    def __init__(self, data: dict[str, Any]) -> None:
        self.client = data.get("client")
        self.custom = data.get("custom")
        self.env = data.get("env")


def _json_header(value: str | None) -> dict[str, Any] | None:
    if not value:
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None  # a malformed optional header must not fail the invocation
    return parsed if isinstance(parsed, dict) else None


class LambdaContext:
    """aws_request_id, function_name, memory_limit_in_mb, get_remaining_time_in_millis() and the rest."""

    def __init__(self, invocation: Invocation) -> None:
        env = os.environ
        self.aws_request_id = invocation.request_id
        self.invoked_function_arn = invocation.invoked_function_arn
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "0") or 0)
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.tenant_id = invocation.tenant_id
        identity = _json_header(invocation.cognito_identity)
        client_context = _json_header(invocation.client_context)
        self.identity = CognitoIdentity(identity) if identity is not None else None
        self.client_context = ClientContext(client_context) if client_context is not None else None
        self._deadline_ms = invocation.deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before Lambda stops this invocation (the deadline is wall-clock epoch ms)."""
        return max(self._deadline_ms - int(time.time() * 1000), 0)

    def __repr__(self) -> str:
        return f"LambdaContext(aws_request_id={self.aws_request_id!r}, function_name={self.function_name!r})"
