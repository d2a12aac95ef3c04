"""The one exception the request validators raise; each wire writes it in its own error shape."""

from __future__ import annotations


class Invalid(Exception):
    """A request the real API would refuse. `message` is worded like the real API's."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None, status: int = 400):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status
