"""``python -m momor.lambda_stream module:attr`` runs the streaming Runtime API loop for that ASGI app."""

import sys

from momor.lambda_stream.runner import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
