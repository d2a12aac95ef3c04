"""Lambda response streaming for an ASGI app on the Python managed runtime.

Python's managed runtime only returns whole responses, so this package replaces its Runtime API
client for HTTP functions: it fetches invocations, turns each event into an ASGI scope with Mangum's
handlers, runs the app, and writes the response to the Runtime API in streaming mode as the app
produces it.

    runtime_api.py  the Runtime API wire: /next, the chunked streaming /response, /error, /init/error,
                    /restore/next and /restore/error (SnapStart)
    cycle.py        one ASGI http cycle as a state machine whose `send` streams (Mangum's buffers)
    context.py      the context object handlers receive (what the stock runtime builds)
    runner.py       the process: sys.path, app import, lifespan once, SnapStart hooks, the invocation loop
    snapstart.py    Momor's SnapStart hooks: warm before the snapshot, refresh after each restore
    unwrapped.py    a streaming function's Handler, which refuses to load (the wrapper is missing)

Start it with ``python -m momor.lambda_stream module:attr``, or on the managed runtime through
``lambda_bootstrap.sh`` set as ``AWS_LAMBDA_EXEC_WRAPPER``. Nothing is imported here so that the
entry point pays only for what it uses.
"""
