"""The HTTP status of a JSON answer, read from the error it carries, however it is spelled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from strictmcp.proxy.http_asgi import MODERN_STATUS, answer_json


def _status(body: bytes) -> int:
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(answer_json(send, [body], [], batch=False, statuses=MODERN_STATUS))
    assert sent[1]["body"] == body
    status: int = sent[0]["status"]
    return status


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', 200),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}', 400),
        # The same error with its key escaped: JSON reads it as "error" all the same.
        (b'{"jsonrpc":"2.0","id":1,"\\u0065rror":{"code":-32601,"message":"x"}}', 404),
        # A result that only mentions the word is not an error.
        (b'{"jsonrpc":"2.0","id":1,"result":{"text":"error"}}', 200),
    ],
)
def test_json_answer_status_follows_its_error(body: bytes, status: int) -> None:
    assert _status(body) == status
