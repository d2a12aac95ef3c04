"""AWS list prices the cost model (infra/bench/cost.py) multiplies measured quantities by.

One table, one region, one date: change a price here and every figure follows. Each price was looked
up on the date below (the search tool's stored copies of AWS's pricing pages, and where AWS's page
renders its rates from a script, a page quoting them, named beside the figure), first tier only
(Lambda's duration is tiered past 6 billion GB-s a month, API Gateway's past 333 million requests).
Free tiers are left out: the figures are what a million calls cost past them.
"""

from __future__ import annotations

DATE = "2026-12-01"
REGION = "us-east-1"

LAMBDA_GB_SECOND = {
    # https://aws.amazon.com/lambda/pricing/ ("Duration ... rounded up to the nearest 1 ms"; the rate
    # table renders from a script; figures as quoted by https://cloudchipr.com/blog/aws-lambda-pricing,
    # US East (N. Virginia), first 6 billion GB-s (x86) / 7.5 billion GB-s (Arm) a month).
    "x86_64": 0.0000166667,
    "arm64": 0.0000133334,
}
LAMBDA_REQUEST = 0.20 / 1_000_000
"""https://aws.amazon.com/lambda/pricing/: $0.20 per million requests, either architecture."""

APIGW_REST_REQUEST = 3.50 / 1_000_000
"""https://aws.amazon.com/api-gateway/pricing/: REST APIs, $3.50 per million calls (first 333 million)."""
APIGW_STREAM_BYTES_PER_REQUEST = 10 * 1024 * 1024
"""Response streaming (responseTransferMode STREAM, every Momor route in template.yaml) adds no price of
its own: each 10 MB of a streamed response, rounded up, is billed as one request.
https://aws.amazon.com/blogs/compute/building-responsive-apis-with-amazon-api-gateway-response-streaming/
(summarised at https://aws-news.com/article/2025-11-19-building-responsive-apis-with-amazon-api-gateway-response-streaming:
"Pricing unchanged; each 10MB rounded up billed as single request"); the pricing page it points to is
https://aws.amazon.com/api-gateway/pricing/."""

DYNAMODB_WRITE_REQUEST_UNIT = 0.625 / 1_000_000
DYNAMODB_READ_REQUEST_UNIT = 0.125 / 1_000_000
"""https://aws.amazon.com/dynamodb/pricing/on-demand/: on-demand (every Momor table is PAY_PER_REQUEST),
$0.625 per million write request units, $0.125 per million read request units (since the November 2024
on-demand price cut; quoted by https://airbyte.com/data-engineering-resources/dynamodb-pricing)."""

LOGS_INGESTION_PER_GB = 0.50
"""https://aws.amazon.com/cloudwatch/pricing/: CloudWatch Logs Standard ingestion, $0.50 per GB; for
Lambda's logs (vended, tiered since May 2025) the first 10 TB a month are at this rate
(https://www.duckbillgroup.com/?p=9080). GB is 2**30 bytes in AWS billing."""

SECRETS_MANAGER_CALL = 0.05 / 10_000
"""https://aws.amazon.com/secrets-manager/pricing/: $0.05 per 10,000 API calls (GetSecretValue)."""

S3_GET = 0.0004 / 1_000
"""https://aws.amazon.com/s3/pricing/: S3 Standard GET, $0.0004 per 1,000 requests (a conditional GET
that answers 304 Not Modified is a GET too)."""

XRAY_TRACE_RECORDED = 5.00 / 1_000_000
XRAY_TRACE_READ = 0.50 / 1_000_000
"""https://aws.amazon.com/xray/pricing/: traces recorded, $5.00 per million ($0.000005 a trace); traces
retrieved or scanned, $0.50 per million ($0.0000005 a trace); the first 100,000 recorded and 1,000,000
retrieved or scanned a month free. A trace is one request, every segment of it (API Gateway's and the
function's) included."""
XRAY_DEFAULT_RESERVOIR_PER_S = 1
XRAY_DEFAULT_FIXED_RATE = 0.05
"""X-Ray's default sampling rule, which API Gateway's active tracing (template.yaml's TracingEnabled) and
Lambda's (Tracing: Active) follow while the account has no rule of its own: "1 request per second, with
5 percent of requests sampled past that limit"
(https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-enabling-xray.html); the
reservoir is shared by every service the rule matches."""

CLOUDWATCH_CUSTOM_METRIC_MONTH = 0.30
"""https://aws.amazon.com/cloudwatch/pricing/ (its Metrics tab renders from a script; as quoted by
https://github.com/nishinoshake/aws-rough/issues/37 and https://c3x.dev/blog/aws-cloudwatch-metrics-cost/):
$0.30 per custom metric a month for the first 10,000 ($0.10, $0.05, $0.02 past 10,000, 250,000 and
1,000,000). "All custom metrics charges are prorated by the hour and metered only when you send metrics
to CloudWatch." A metric is one name with one set of dimension values; EMF metrics (momor/metrics.py)
are custom metrics, their log lines billed as log ingestion (in "Logs")."""
