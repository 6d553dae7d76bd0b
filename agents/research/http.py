"""HTTP calls to research services (search, image and paper APIs) with retries and readable failures.

Rate limits (429) and server errors (5xx) are retried a few times, honouring a
Retry-After of a few seconds at most; what still fails becomes a `ToolError`
naming the service, the request and the status, so the model can choose
another query or tool. These endpoints come from the operator's configuration,
so, unlike the URLs a model asks `fetch_url` for, they may be private (a
self-hosted SearXNG on localhost).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any, Optional

import httpx

from agents.tools.registry import ToolError

USER_AGENT = "deckforge-research/0.1 (research tools of a presentation agent)"
RETRY_AFTER_MAX_S = 5.0
BACKOFF_BASE_S = 0.5


@dataclass(frozen=True)
class Service:
    """One configured endpoint as a backend calls it."""

    name: str
    base_url: str
    api_key: Optional[str]
    timeout_s: float
    retries: int

    def url(self, path: str) -> str:
        return f"{self.base_url.rstrip('/')}/{path.lstrip('/')}"

    def auth(self, header: str = "Authorization", scheme: str = "Bearer ") -> dict[str, str]:
        """The header carrying the API key, or none when no key is set."""
        return {header: f"{scheme}{self.api_key}"} if self.api_key else {}


def _retry_delay(response: Optional[httpx.Response], attempt: int) -> float:
    hinted = response.headers.get("retry-after") if response is not None else None
    try:
        return min(RETRY_AFTER_MAX_S, max(0.0, float(hinted))) if hinted else random.uniform(0, BACKOFF_BASE_S * 2**attempt)
    except ValueError:
        return BACKOFF_BASE_S


def _failure(service: Service, what: str, response: httpx.Response) -> ToolError:
    if response.status_code == 429:
        return ToolError(f"{service.name}: rate limited (HTTP 429) for {what}; wait, or use another tool or query.")
    detail = response.text[:200].strip()
    return ToolError(
        f"{service.name}: HTTP {response.status_code} {response.reason_phrase} for {what}" + (f": {detail}" if detail else "")
    )


async def request(
    service: Service,
    method: str,
    path: str,
    what: str,
    *,
    params: Optional[dict[str, Any]] = None,
    json: Optional[dict[str, Any]] = None,
    headers: Optional[dict[str, str]] = None,
) -> httpx.Response:
    """A successful response; `what` describes the request in error messages (e.g. "search 'transformers'")."""
    attempts = service.retries + 1
    async with httpx.AsyncClient(timeout=service.timeout_s, trust_env=False, headers={"User-Agent": USER_AGENT}) as client:
        for attempt in range(attempts):
            response = None
            try:
                response = await client.request(method, service.url(path), params=params, json=json, headers=headers)
            except httpx.TransportError as exc:
                if attempt == attempts - 1:
                    raise ToolError(
                        f"{service.name}: cannot reach {service.base_url} for {what} ({type(exc).__name__}: {exc})"
                    ) from exc
            else:
                if response.status_code < 400:
                    return response
                retryable = response.status_code == 429 or response.status_code >= 500
                if not retryable or attempt == attempts - 1:
                    raise _failure(service, what, response)
            await asyncio.sleep(_retry_delay(response, attempt))
    raise AssertionError("unreachable: the last attempt returns or raises")


async def get_json(service: Service, path: str, what: str, **kwargs: Any) -> dict[str, Any]:
    response = await request(service, "GET", path, what, **kwargs)
    return _json_object(service, what, response)


async def post_json(service: Service, path: str, what: str, **kwargs: Any) -> dict[str, Any]:
    response = await request(service, "POST", path, what, **kwargs)
    return _json_object(service, what, response)


def _json_object(service: Service, what: str, response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError as exc:
        raise ToolError(f"{service.name}: the answer to {what} is not JSON ({response.text[:120]!r})") from exc
    if not isinstance(data, dict):
        raise ToolError(f"{service.name}: the answer to {what} is a JSON {type(data).__name__}, not an object")
    return data
