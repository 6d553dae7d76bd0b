"""A checked HTTP GET: fetch a URL, refusing private networks at every hop.

Each hop's host is resolved and every address it resolves to is checked; the
request then goes to the checked address itself (Host header and TLS SNI keep
the name), so a DNS answer that changes between check and connect cannot
redirect it. Hosts in `SandboxConfig.allowed_hosts` (a local mirror) and
`allow_private_addresses` lift the check. download_file (agents/tools/download.py)
and fetch_url's `web` backend (agents/research/fetch.py) both fetch through it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import httpx

from agents.config import SandboxConfig
from agents.sandbox import SandboxError
from agents.tools.registry import ToolError

MAX_REDIRECTS = 5
USER_AGENT = "deckforge-agent/0.1 (+download_file)"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def refusal(address: IPAddress) -> str | None:
    """Why an address may not be reached, or None for a public one."""
    ip = getattr(address, "ipv4_mapped", None) or address
    for kind in ("loopback", "link_local", "private", "reserved", "multicast", "unspecified"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "non-global"


async def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ToolError(f"cannot resolve {host!r}: {exc.strerror}") from exc
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


async def checked_request(url: httpx.URL, cfg: SandboxConfig) -> httpx.Request:
    """A GET for `url`, pinned to a checked address; SandboxError before any connection when refused."""
    if url.scheme not in ("http", "https") or not url.host:
        raise SandboxError(f"{url}: only http(s) URLs can be downloaded")
    headers = {"User-Agent": USER_AGENT}
    if cfg.allow_private_addresses or url.host in cfg.allowed_hosts:
        return httpx.Request("GET", url, headers=headers)
    addresses = await _resolve(url.host, url.port or (443 if url.scheme == "https" else 80))
    for address in addresses:
        if why := refusal(address):
            raise SandboxError(
                f"{url}: refused, {url.host} resolves to {address}, a {why} address; only public addresses can be reached"
            )
    headers["Host"] = url.netloc.decode("ascii")
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    return httpx.Request("GET", url.copy_with(host=str(addresses[0])), headers=headers, extensions=extensions)


async def fetch(url: str, cfg: SandboxConfig) -> tuple[bytes, httpx.URL]:
    """The body of `url` (following checked redirects) and the URL it came from."""
    current = httpx.URL(url)
    async with httpx.AsyncClient(trust_env=False, follow_redirects=False, timeout=cfg.call_timeout_s) as client:
        for _ in range(MAX_REDIRECTS + 1):
            response = await client.send(await checked_request(current, cfg), stream=True)
            try:
                if response.is_redirect:
                    current = current.join(response.headers["location"])
                    continue
                if response.status_code >= 400:
                    raise ToolError(f"{current}: HTTP {response.status_code} {response.reason_phrase}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > cfg.max_download_bytes:
                        raise ToolError(f"{current}: larger than the {cfg.max_download_bytes:,}-byte download limit")
                return bytes(body), current
            finally:
                await response.aclose()
    raise ToolError(f"{url}: more than {MAX_REDIRECTS} redirects")
