"""The process's structured logger (Powertools: JSON lines, one service name, request id keys).

Nothing secret is ever passed to it: keys live only in `Target.api_key` and key objects whose
repr hides them, and error texts are Momor's own.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "momor"))
