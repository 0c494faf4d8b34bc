"""The deep URL check: is the URL reachable, asked with one ``HEAD`` request per hop.

Every hop passes the :class:`~strictmcp.guards.UrlGuard` first (the URL itself with
:meth:`~strictmcp.guards.UrlGuard.check`, each redirect target with
:meth:`~strictmcp.guards.UrlGuard.check_redirect`), so no request ever goes to an address the
guard refuses; redirects are followed here, hop by hop, never by the HTTP client. ``HEAD``
asks for no body, and no cookie, credential or proxy from the environment is used. The
client resolves the name again to connect, so, as for any fetcher, DNS rebinding between the
check and the request is not closed here (see :meth:`UrlGuard.check_resolved`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urljoin

from ..protocol import Severity
from .base import GuardFinding, not_a_string
from .codes import GuardCode
from .url import UrlGuard

__all__ = ["UrlReachCheck"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class UrlReachCheck:
    """The URL guard's findings and, when ``reachable`` and the guard allows the URL, whether
    a ``HEAD`` request gets an answer within ``request_timeout_ms`` per hop, following at most
    ``max_redirects`` redirects.

    ``DEEP_URL_UNREACHABLE`` (error) when no answer comes (refused, timed out, too many
    redirects); ``DEEP_URL_STATUS`` (warning) for an answer of 400 or more (some servers
    answer ``HEAD`` with 405 and ``GET`` fine). Messages never quote the URL.
    """

    kind: ClassVar[str] = "url"

    guard: UrlGuard
    reachable: bool = False
    request_timeout_ms: int = 2000
    max_redirects: int = 3

    def __post_init__(self) -> None:
        if self.request_timeout_ms < 1 or self.max_redirects < 0:
            raise ValueError("request_timeout_ms must be positive, max_redirects not negative")

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about the URL ``value``; never raises."""
        if not isinstance(value, str):
            return not_a_string(value, self.kind)
        findings = self.guard.check(value)
        if not self.reachable or _refused(findings):
            return findings
        # Imported at the first check, not with the policy: the proxy's first answer waits for
        # every module the policy imports.
        import httpx2  # noqa: PLC0415

        timeout = self.request_timeout_ms / 1000
        with httpx2.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            url = value
            for _ in range(self.max_redirects + 1):
                try:
                    response = client.head(url)
                except Exception as error:  # any transport failure is "no answer"
                    return [*findings, _unreachable(f"no answer ({type(error).__name__})")]
                location = response.headers.get("location")
                if response.status_code not in _REDIRECTS or location is None:
                    return findings + _status(response.status_code)
                hop = self.guard.check_redirect(url, location)
                if _refused(hop):
                    return findings + hop
                url = urljoin(url, location)
        return [*findings, _unreachable(f"more than {self.max_redirects} redirects")]


def _refused(findings: list[GuardFinding]) -> bool:
    return any(finding.severity is Severity.ERROR for finding in findings)


def _unreachable(why: str) -> GuardFinding:
    return GuardFinding(GuardCode.DEEP_URL_UNREACHABLE, f"the URL is not reachable: {why}")


def _status(status: int) -> list[GuardFinding]:
    if status < 400:
        return []
    message = f"the server answers a HEAD request with status {status}"
    return [GuardFinding(GuardCode.DEEP_URL_STATUS, message, Severity.WARNING)]
