"""The apps mount plain Starlette routes (no FastAPI APIRoute: nothing a call does not use), and the
router's own refusals (unknown path, wrong method) still answer in each dialect's error shape."""

from __future__ import annotations

import httpx2
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import Route

from momor.app import all_routes


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setenv("MOMOR_CATALOG_FILE", "/nonexistent/catalog.json")  # no route here reads it
    from momor.config import reset_config

    reset_config()
    yield all_routes()
    reset_config()


def test_every_route_is_a_plain_starlette_route_in_a_fastapi_app(app):
    assert isinstance(app, FastAPI)
    routes = app.router.routes
    assert routes and all(type(r) is Route for r in routes), [type(r) for r in routes if type(r) is not Route]
    assert not any(isinstance(r, APIRoute) for r in routes)
    paths = {r.path for r in routes}
    assert {"/models", "/v1/chat/completions", "/v1/messages", "/generations/{record_id}", "/usage"} <= paths


@pytest.mark.parametrize(("method", "path", "status", "shape"), [
    ("PUT", "/models", 405, "native"),
    ("GET", "/v1/chat/completions", 405, "openai"),
    ("GET", "/v1/messages", 405, "anthropic"),
    ("POST", "/usage", 405, "native"),
    ("POST", "/nowhere", 404, "native"),
    ("POST", "/v1/completions", 404, "openai"),
    ("GET", "/v1/messages/batches", 404, "anthropic"),
])
async def test_refusals_keep_each_dialects_error_shape(app, method, path, status, shape):
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://momor") as client:
        answer = await client.request(method, path)
    assert answer.status_code == status
    body = answer.json()
    if shape == "native":
        assert answer.headers["content-type"] == "application/problem+json" and body["status"] == status
    elif shape == "openai":
        assert body["error"]["type"] == "invalid_request_error" and body["error"]["message"]
    else:
        assert body["type"] == "error" and body["error"]["type"] in ("not_found_error", "invalid_request_error")
    assert answer.headers["x-momor-request-id"] and answer.headers["x-should-retry"] == "false"
