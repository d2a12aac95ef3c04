#!/bin/bash
# AWS_LAMBDA_EXEC_WRAPPER for the python3.x managed runtimes: run our streaming Runtime API loop
# instead of the stock (buffering) one.
#
# The runtime's /var/runtime/bootstrap runs the wrapper as
#     exec -- "$AWS_LAMBDA_EXEC_WRAPPER" /var/lang/bin/python3.13 /var/runtime/bootstrap.py
# so "$1" is the interpreter and the rest is the stock runtime client. We keep the interpreter and
# replace the rest, as AWS's Lambda Web Adapter does with its own wrapper.
#
# MOMOR_ASGI_APP names the ASGI app as module:attr, relative to the task root (app:app when the
# function's CodeUri is functions/<route>/). Without it the loop fails the init through the Runtime
# API (Runtime.MalformedHandlerName): a streaming function must never fall back to the stock,
# buffered runtime, whose JSON answers a STREAM integration cannot read.
set -euo pipefail

if [ "$#" -lt 1 ]; then
  echo "lambda_bootstrap.sh: expected the interpreter and its arguments" >&2
  exit 127
fi

interpreter="$1"
# The stock bootstrap.py puts these on sys.path; we skip it, so momor (shipped in the layer under
# /opt/python) must be findable before our loop starts. The loop adds them again as site dirs
# (momor.lambda_stream.runner.prepare_sys_path) for .pth files. The version comes from the
# interpreter's name (/var/lang/bin/python3.13); asking the interpreter would cost a second start.
version="${interpreter##*/python}"
if [[ ! "$version" =~ ^[0-9]+\.[0-9]+$ ]]; then
  version="$("$interpreter" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
fi
task_root="${LAMBDA_TASK_ROOT:-/var/task}"
export PYTHONPATH="${task_root}:/opt/python/lib/python${version}/site-packages:/opt/python${PYTHONPATH:+:${PYTHONPATH}}"

exec "$interpreter" -m momor.lambda_stream "${MOMOR_ASGI_APP:-}"
