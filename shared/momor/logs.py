"""The process's structured logger (Powertools: JSON lines, one service name, request id keys).

Nothing secret is ever passed to it: keys live only in `Target.api_key` and key objects whose
repr hides them, and error texts are Momor's own.
"""

from __future__ import annotations

import logging
import os

from aws_lambda_powertools import Logger

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "momor"))

# At DEBUG the AWS SDK logs whole responses, Secrets Manager's SecretString (every saved key)
# among them. Its loggers are held at INFO whatever the root level is.
for _name in ("botocore", "boto3", "s3transfer"):
    logging.getLogger(_name).setLevel(max(logging.INFO, logging.getLogger(_name).level))
