"""The Handler of a streaming function: the stock runtime only gets here if the exec wrapper did not run.

A streaming function's integration reads Lambda's streamed HTTP response (a JSON prelude, eight
NULs, the body). Answered by the stock runtime instead, through Mangum, the function returns
buffered JSON that API Gateway cannot read, and every call fails while the function looks healthy.
So its Handler is this module, which refuses to load: the init fails at once, with a message that
says what is missing, and Lambda's own error metrics show it. With the wrapper in place
(AWS_LAMBDA_EXEC_WRAPPER=/opt/python/momor/lambda_bootstrap.sh), the stock runtime never starts
and this module is never imported.
"""


class ExecWrapperMissing(RuntimeError):
    """The stock runtime started a streaming function: AWS_LAMBDA_EXEC_WRAPPER is missing or wrong."""


raise ExecWrapperMissing(
    "this function streams its responses and must start through its exec wrapper: set "
    "AWS_LAMBDA_EXEC_WRAPPER=/opt/python/momor/lambda_bootstrap.sh and MOMOR_ASGI_APP=module:attr "
    "(see template.yaml); the stock runtime would answer buffered JSON the STREAM integration cannot read"
)
