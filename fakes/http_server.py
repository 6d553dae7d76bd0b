"""A scripted HTTP server on loopback, for tests of clients of web APIs (search, images, papers, pages).

`async with ScriptedServer() as srv:` then `srv.on("/search", ScriptedAnswer(body), ...)`:
each request to that path gets the next answer (the last one repeats), and is
recorded in `srv.requests` (method, path, query, headers, body).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from aiohttp import web


@dataclass(frozen=True)
class ScriptedAnswer:
    body: Any = None  # dict or list: JSON; str: text; bytes: as they are
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    content_type: Optional[str] = None
    delay_s: float = 0.0  # the answer starts after this long (a slow or hung server)


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ScriptedServer:
    def __init__(self) -> None:
        self.routes: dict[str, list[ScriptedAnswer]] = {}
        self.requests: list[Seen] = []
        self._runner: Optional[web.AppRunner] = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def on(self, path: str, *answers: ScriptedAnswer) -> None:
        self.routes[path] = list(answers)

    def seen(self, path: str) -> list[Seen]:
        return [r for r in self.requests if r.path == path]

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append(Seen(request.method, request.path, dict(request.query), dict(request.headers), await request.read()))
        answers = self.routes.get(request.path)
        if not answers:
            return web.Response(status=404, text=f"no route {request.path}")
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        await asyncio.sleep(answer.delay_s)
        if isinstance(answer.body, (dict, list)):
            return web.json_response(answer.body, status=answer.status, headers=answer.headers)
        if isinstance(answer.body, bytes):
            return web.Response(
                body=answer.body,
                status=answer.status,
                headers=answer.headers,
                content_type=answer.content_type or "application/octet-stream",
            )
        return web.Response(
            text=answer.body or "", status=answer.status, headers=answer.headers, content_type=answer.content_type or "text/plain"
        )

    async def __aenter__(self) -> ScriptedServer:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: Any) -> None:
        assert self._runner is not None
        await self._runner.cleanup()
