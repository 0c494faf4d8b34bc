"""The URLs and hosts a policy names: which are safe to fetch keys or tokens from, which
name a Redis server, which host is this machine."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_safe_url(url: str) -> bool:
    """An https URL, or an http one on loopback (a test's or a sidecar's): anything else
    would let a network attacker swap the keys or read the metadata."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    if parts.fragment or not parts.hostname:
        return False
    if parts.scheme == "https":
        return True
    return parts.scheme == "http" and is_loopback(parts.hostname)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback; of names only
    ``localhost`` is (RFC 6761), any other can resolve anywhere."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redis_url_problem(url: str) -> str | None:
    """Why ``url`` is not a Redis server's URL, or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        return "must be a redis:// or rediss:// URL with a host"
    return None
