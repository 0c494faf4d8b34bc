"""The URL guard: an argument that a tool will fetch must not reach into the server's network.

SSRF defences fail in the gaps between parsers: the guard's parser sees one host and the
fetcher's another. So :class:`UrlGuard` does not try to be lenient like a browser; it refuses
every spelling on which common parsers (WHATWG/browsers, ``urllib.parse``, httpx, curl, the C
library) are known to disagree, and checks what is left the way those parsers would read it:

* whitespace, control and invisible characters anywhere (WHATWG strips tabs and newlines,
  others keep them), backslashes (WHATWG reads ``\\`` as ``/``, ``urllib`` does not), anything
  but ``scheme://authority`` (``http:/x``, ``https:host``, ``https:///host``), a
  percent-encoded host (WHATWG decodes it) and an unbracketed IPv6 address;
* user information (``https://trusted.com@evil.com/``) unless ``allow_userinfo``; the host is
  always what follows the *last* ``@``, as WHATWG and ``urllib`` agree. ``#`` and ``?`` end the
  authority, so ``https://evil.com#@trusted.com`` is a URL for ``evil.com``;
* a host that ends in a number is an IPv4 address, parsed as WHATWG, ``inet_aton`` and
  ``getaddrinfo`` do (decimal ``2130706433``, octal ``0177.0.0.1``, hex ``0x7f.1``, short
  ``127.1``, mixed, fullwidth digits): any spelling but plain dotted decimal is
  :attr:`~GuardCode.URL_OBFUSCATED_ADDRESS`, and one that is not a valid address is invalid;
* names are compared after IDNA (the standard library's IDNA 2003 codec, which maps fullwidth
  letters and dots as browsers' UTS #46 does) and lowercasing, with one trailing dot dropped.
  The characters IDNA 2003 and IDNA 2008 map differently (``ß``, ``ẞ``, ``ς``; the joiners are
  refused as invisible) are refused, since the two would name different hosts.

Which addresses are refused (:attr:`~GuardCode.URL_PRIVATE_ADDRESS`): everything
``ipaddress`` does not call ``is_global``, plus, whatever the Python version says, the ranges
in ``_DENIED_V4``/``_DENIED_V6`` (multicast, CGNAT, documentation, benchmarking, 6to4 relay,
the whole 192.0.0.0/24 including the anycast 192.0.0.9 and .10 that newer Pythons call
global, site-local, the new documentation prefix 3fff::/20, SRv6 5f00::/16) and every IPv6
address outside 2000::/3. IPv6 addresses that carry an IPv4 address are judged by that IPv4
address: IPv4-mapped ``::ffff:0:0/96``, IPv4-compatible ``::/96``, IPv4-translated
``::ffff:0:0:0/96`` (these three are also obfuscation when written as a literal), NAT64
``64:ff9b::/96`` and 6to4 ``2002::/16``. Teredo (2001::/32) and local-use NAT64
(64:ff9b:1::/48) are refused outright; ISATAP interface ids are not decoded (the address is
an ordinary IPv6 address and is judged as one). Names that always mean the local network
(``localhost`` and ``*.localhost``, ``*.local``, ``*.internal``, ``*.home.arpa``) and
single-label names (resolved through local search domains) are refused too, so a guard that
does not resolve still catches them.

Resolution (``resolve=True``) happens only for a URL that passed every other check, so a
refused URL never causes a DNS query (DNS names can carry data out). A checked name can
resolve differently when the fetcher connects (DNS rebinding): a fetcher that must be safe
against that connects to the addresses :meth:`UrlGuard.check_resolved` returns.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urljoin

from .base import GuardFinding, not_a_string
from .codes import GuardCode

__all__ = ["RedirectRefused", "Resolver", "SystemResolver", "UrlGuard"]

Resolver = Callable[[str], Sequence[str]]
"""Turns a host name (ASCII, IDNA-encoded) into IP address strings; raises when it cannot."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_LABEL = re.compile(r"[a-z0-9_-]{1,63}")
_DECIMAL = re.compile(r"[0-9]+")
_OCTAL = re.compile(r"0[0-7]*")
_HEX = re.compile(r"0[xX][0-9A-Fa-f]*")

# Map differently under IDNA 2003 (what the standard library implements) and IDNA 2008/UTS #46
# (what browsers and httpx implement): the same text would name two different hosts.
_IDNA_DEVIATIONS = frozenset("\u00df\u1e9e\u03c2")

_LOCAL_SUFFIXES = (
    ("localhost", "the URL's host is a localhost name, which always means loopback (RFC 6761)"),
    ("local", "the URL's host is under .local, link-local multicast DNS (RFC 6762)"),
    ("internal", "the URL's host is under .internal, reserved for private networks"),
    ("home.arpa", "the URL's host is under .home.arpa, for home networks (RFC 8375)"),
)

_N4 = ipaddress.IPv4Network
_N6 = ipaddress.IPv6Network

# The first match names the range in the message, so narrower ranges come first.
_DENIED_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_N4("0.0.0.0/8"), "0.0.0.0/8 (this network; 0.0.0.0 reaches the local host)"),
    (_N4("10.0.0.0/8"), "10.0.0.0/8 (private, RFC 1918)"),
    (_N4("100.64.0.0/10"), "100.64.0.0/10 (shared address space / carrier-grade NAT)"),
    (_N4("127.0.0.0/8"), "127.0.0.0/8 (loopback)"),
    (_N4("169.254.0.0/16"), "169.254.0.0/16 (link-local, where cloud metadata services live)"),
    (_N4("172.16.0.0/12"), "172.16.0.0/12 (private, RFC 1918)"),
    (_N4("192.0.0.0/24"), "192.0.0.0/24 (IETF protocol assignments)"),
    (_N4("192.0.2.0/24"), "192.0.2.0/24 (documentation)"),
    (_N4("192.88.99.0/24"), "192.88.99.0/24 (deprecated 6to4 relay anycast)"),
    (_N4("192.168.0.0/16"), "192.168.0.0/16 (private, RFC 1918)"),
    (_N4("198.18.0.0/15"), "198.18.0.0/15 (benchmarking)"),
    (_N4("198.51.100.0/24"), "198.51.100.0/24 (documentation)"),
    (_N4("203.0.113.0/24"), "203.0.113.0/24 (documentation)"),
    (_N4("224.0.0.0/4"), "224.0.0.0/4 (multicast)"),
    (_N4("255.255.255.255/32"), "255.255.255.255 (limited broadcast)"),
    (_N4("240.0.0.0/4"), "240.0.0.0/4 (reserved)"),
)
_DENIED_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_N6("::/128"), ":: (unspecified)"),
    (_N6("::1/128"), "::1 (loopback)"),
    (_N6("64:ff9b:1::/48"), "64:ff9b:1::/48 (local-use NAT64)"),
    (_N6("100::/64"), "100::/64 (discard-only)"),
    (_N6("2001::/32"), "2001::/32 (Teredo)"),
    (_N6("2001:2::/48"), "2001:2::/48 (benchmarking)"),
    (_N6("2001:10::/28"), "2001:10::/28 (deprecated ORCHID)"),
    (_N6("2001:db8::/32"), "2001:db8::/32 (documentation)"),
    (_N6("3fff::/20"), "3fff::/20 (documentation)"),
    (_N6("5f00::/16"), "5f00::/16 (SRv6 segment identifiers)"),
    (_N6("fc00::/7"), "fc00::/7 (unique local, private)"),
    (_N6("fe80::/10"), "fe80::/10 (link-local)"),
    (_N6("fec0::/10"), "fec0::/10 (deprecated site-local)"),
    (_N6("ff00::/8"), "ff00::/8 (multicast)"),
)
_GLOBAL_UNICAST = _N6("2000::/3")
_MAPPED = _N6("::ffff:0:0/96")
_COMPATIBLE = _N6("::/96")
_TRANSLATED = _N6("::ffff:0:0:0/96")
_NAT64 = _N6("64:ff9b::/96")

# Bounds the lookups that may hang at once: a lookup that outlives its timeout keeps its slot
# until the C library gives up, so a flood of slow names cannot pile up threads.
_LOOKUP_SLOTS = threading.BoundedSemaphore(8)


@dataclass(frozen=True)
class SystemResolver:
    """The default :data:`Resolver`: ``socket.getaddrinfo`` bounded by ``timeout`` seconds.

    ``getaddrinfo`` cannot be cancelled, so it runs on a daemon thread that is abandoned on
    timeout; at most eight lookups run at once, and a call that cannot start one in time
    fails like a lookup that timed out.
    """

    timeout: float = 2.0

    def __call__(self, host: str) -> list[str]:
        """Every address ``host`` resolves to, for TCP; raises ``OSError`` on failure."""
        deadline = time.monotonic() + self.timeout
        if not _LOOKUP_SLOTS.acquire(timeout=self.timeout):
            raise TimeoutError("too many host name lookups in flight")
        outcome: list[list[str] | Exception] = []
        done = threading.Event()

        def lookup() -> None:
            try:
                infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
                outcome.append([str(info[4][0]) for info in infos])
            except Exception as error:  # handed to the caller: a thread cannot raise to it
                outcome.append(error)
            finally:
                _LOOKUP_SLOTS.release()
                done.set()

        try:
            threading.Thread(target=lookup, name="strictmcp-resolve", daemon=True).start()
        except BaseException:
            _LOOKUP_SLOTS.release()
            raise
        if not done.wait(max(0.0, deadline - time.monotonic())):
            raise TimeoutError("host name lookup timed out")
        result = outcome[0]
        if isinstance(result, Exception):
            raise result
        return result


class RedirectRefused(Exception):
    """Raised by :meth:`UrlGuard.redirect_hook` hooks to stop a fetch at a refused redirect.

    ``findings`` are the :attr:`~GuardCode.URL_REDIRECT_NOT_ALLOWED` findings; the message
    is theirs, so it does not quote either URL.
    """

    def __init__(self, findings: list[GuardFinding]) -> None:
        super().__init__("; ".join(f.message for f in findings))
        self.findings = findings


@dataclass(frozen=True)
class _HostRule:
    """One ``hosts`` entry: a name or an address's canonical text, or a ``*.`` suffix."""

    name: str
    wildcard: bool

    def matches(self, host: str) -> bool:
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name


@dataclass(frozen=True)
class _Host:
    """The host as a fetcher will use it: ``canonical`` is an IDNA name or an address."""

    canonical: str
    address: IPAddress | None


@dataclass(frozen=True)
class UrlGuard:
    """Checks that a URL argument is safe to fetch: scheme, host, port, address.

    ``schemes`` are the allowed schemes (only ``scheme://authority`` URLs are accepted).
    ``hosts``, when set, is an allowlist of exact names, IP addresses and ``*.example.com``
    wildcards that match strict subdomains only; it does not lift the address checks.
    ``allow_private`` turns the address checks (and the local-name checks) off: for tools
    meant to reach an internal network. ``allow_ports``, when set, lists the ports a URL may
    use (explicitly or by its scheme's default). ``allow_userinfo`` lets ``user:pass@`` through
    (a single ``@``). ``resolve`` resolves names with ``resolver`` (default
    :class:`SystemResolver`) and refuses a name if *any* of its addresses is refused.
    ``max_length`` bounds the URL in characters.

    Invalid configuration raises ``ValueError`` at construction; :meth:`check` never raises.
    """

    kind: ClassVar[str] = "url"

    schemes: tuple[str, ...] = ("https",)
    hosts: tuple[str, ...] | None = None
    resolve: bool = True
    resolver: Resolver | None = None
    allow_private: bool = False
    allow_ports: tuple[int, ...] | None = None
    allow_userinfo: bool = False
    max_length: int = 8192
    _rules: tuple[_HostRule, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Policies pass configuration from TOML: a string where a list belongs would
        # otherwise be iterated character by character into a very different allowlist.
        for name in ("schemes", "hosts"):
            entries = getattr(self, name)
            if entries is not None and (
                isinstance(entries, str) or not all(isinstance(e, str) for e in entries)
            ):
                raise ValueError(f"{name} must be a list of strings")
        if self.max_length < 1:
            raise ValueError("max_length must be positive")
        for scheme in self.schemes:
            if not _SCHEME.fullmatch(scheme + ":") or scheme != scheme.lower():
                raise ValueError(f"schemes: {scheme!r} is not a lowercase URL scheme")
        for port in self.allow_ports or ():
            if not 1 <= port <= 65535:
                raise ValueError(f"allow_ports: {port!r} is not a port number")
        object.__setattr__(self, "_rules", tuple(_host_rule(e) for e in self.hosts or ()))

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about the URL ``value``; resolves its host when ``resolve`` is set."""
        return self.check_resolved(value)[0]

    def check_resolved(self, value: Any) -> tuple[list[GuardFinding], tuple[str, ...]]:
        """The findings, and the addresses a fetcher should connect to.

        The addresses are the host's own when it is an IP literal, else every address the
        name resolved to (when ``resolve`` is set), all checked. A fetcher that connects to
        them, instead of resolving the name again, cannot be sent elsewhere by a DNS answer
        that changed after the check. They are empty when there is an error finding, and for
        a name when ``resolve`` is off.
        """
        if not isinstance(value, str):
            return not_a_string(value, self.kind), ()
        findings: list[GuardFinding] = []
        host = self._check_static(value, findings)
        if host is None or findings:
            return findings, ()
        if host.address is not None:
            return findings, (host.canonical,)
        if not self.resolve:
            return findings, ()
        addresses = self._resolve(host.canonical, findings)
        return findings, (() if findings else addresses)

    def check_redirect(self, from_url: str, to_url: Any) -> list[GuardFinding]:
        """Findings that refuse following a redirect from ``from_url`` to ``to_url``.

        ``to_url`` is the ``Location`` header as sent, relative or absolute; it gets every
        check of :meth:`check`, and each finding comes back as
        :attr:`~GuardCode.URL_REDIRECT_NOT_ALLOWED` naming the underlying reason and code.
        """
        if not isinstance(to_url, str):
            findings = not_a_string(to_url, self.kind)
        else:
            # Join only relative references: an absolute target is checked exactly as sent,
            # not as urljoin rewrote it.
            bad_text = text_problem(to_url, self.max_length)
            if bad_text is not None:
                findings = [bad_text]
            elif _SCHEME.match(to_url):
                findings = self.check(to_url)
            else:
                try:
                    findings = self.check(urljoin(from_url, to_url))
                except ValueError:  # from urljoin: check() does not raise
                    findings = [_invalid("the relative redirect target cannot be joined")]
        return [
            GuardFinding(
                GuardCode.URL_REDIRECT_NOT_ALLOWED,
                f"the redirect target is refused: {f.message} [{f.code.value}]",
                f.severity,
            )
            for f in findings
        ]

    def redirect_hook(self) -> Callable[..., None]:
        """A response hook that raises :class:`RedirectRefused` at a refused redirect.

        It reads ``status_code``, ``headers`` and ``request.url`` from the response, which
        httpx and requests both provide, and is called for every response, redirects
        included, before the client follows them::

            client = httpx.Client(
                follow_redirects=True,
                event_hooks={"response": [guard.redirect_hook()]},
            )
            requests.get(url, hooks={"response": guard.redirect_hook()})

        httpx's ``AsyncClient`` awaits its hooks: wrap it, off the event loop since it may
        resolve names: ``async def hook(r): await asyncio.to_thread(sync_hook, r)``. The
        hook checks the target; the client then resolves it again to connect, so this does
        not close DNS rebinding (see :meth:`check_resolved`).
        """

        def hook(response: Any, *args: Any, **kwargs: Any) -> None:
            location = response.headers.get("location")
            if location is None or response.status_code not in _REDIRECT_STATUSES:
                return
            findings = self.check_redirect(str(response.request.url), location)
            if findings:
                raise RedirectRefused(findings)

        return hook

    def _check_static(self, url: str, findings: list[GuardFinding]) -> _Host | None:
        """Everything but resolution; the host when the URL could be taken apart."""
        problem = text_problem(url, self.max_length)
        if problem is not None:
            findings.append(problem)
            return None
        scheme_match = _SCHEME.match(url)
        if scheme_match is None:
            findings.append(_invalid("the URL has no scheme"))
            return None
        scheme = scheme_match.group()[:-1].lower()
        if scheme not in self.schemes:
            findings.append(
                GuardFinding(
                    GuardCode.URL_SCHEME_NOT_ALLOWED,
                    f"the URL's scheme is not one of: {', '.join(self.schemes) or '(none)'}",
                )
            )
        rest = url[scheme_match.end() :]
        if not rest.startswith("//") or rest[2:3] in ("", "/"):
            # http:/x, https:host and https:///host: WHATWG finds a host in them, urllib not.
            findings.append(_invalid("the URL does not have the form scheme://host"))
            return None
        authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
        if "@" in authority:
            if not self.allow_userinfo:
                findings.append(
                    GuardFinding(
                        GuardCode.URL_USERINFO,
                        "the URL carries user information before '@' (credentials, or a"
                        " name made to look like the host; the host is what follows '@')",
                    )
                )
            elif authority.count("@") > 1:
                findings.append(
                    GuardFinding(GuardCode.URL_USERINFO, "the URL has more than one '@'")
                )
        host_port = authority.rpartition("@")[2]
        split = _split_host_port(host_port)
        if isinstance(split, GuardFinding):
            findings.append(split)
            return None
        host_text, port_text = split
        port = self._check_port(scheme, port_text, findings)
        host = _parse_host(host_text, findings)
        if host is None or port is None:
            return None
        self._check_host(host, findings)
        return host

    def _check_port(
        self, scheme: str, text: str | None, findings: list[GuardFinding]
    ) -> int | None:
        """The port the URL uses, or ``None`` (with a finding) when it is not a valid one."""
        if text:
            if not (text.isascii() and text.isdigit() and len(text) <= 5):
                findings.append(_invalid("the URL's port is not a number from 1 to 65535"))
                return None
            port = int(text)
            if not 1 <= port <= 65535:
                findings.append(_invalid("the URL's port is not a number from 1 to 65535"))
                return None
        else:
            port = _DEFAULT_PORTS.get(scheme, 0)
        if self.allow_ports is not None and port not in self.allow_ports:
            allowed = ", ".join(str(p) for p in self.allow_ports) or "(none)"
            findings.append(
                GuardFinding(
                    GuardCode.URL_PORT_NOT_ALLOWED, f"the URL's port is not one of: {allowed}"
                )
            )
        return port

    def _check_host(self, host: _Host, findings: list[GuardFinding]) -> None:
        if self.hosts is not None and not any(r.matches(host.canonical) for r in self._rules):
            findings.append(
                GuardFinding(
                    GuardCode.URL_HOST_NOT_ALLOWED,
                    f"the URL's host is not in the allowlist ({_entries(self.hosts or ())})",
                )
            )
        if self.allow_private:
            return
        if host.address is not None:
            reason = _address_problem(host.address)
            if reason is not None:
                findings.append(
                    GuardFinding(
                        GuardCode.URL_PRIVATE_ADDRESS, f"the URL's host is an address in {reason}"
                    )
                )
            return
        name = host.canonical
        for suffix, message in _LOCAL_SUFFIXES:
            if name == suffix or name.endswith("." + suffix):
                findings.append(GuardFinding(GuardCode.URL_PRIVATE_ADDRESS, message))
                return
        if "." not in name:
            findings.append(
                GuardFinding(
                    GuardCode.URL_PRIVATE_ADDRESS,
                    "the URL's host is a single-label name, which only search domains resolve",
                )
            )

    def _resolve(self, name: str, findings: list[GuardFinding]) -> tuple[str, ...]:
        resolver = self.resolver if self.resolver is not None else SystemResolver()
        try:
            answers = list(resolver(name))
        except TimeoutError:
            findings.append(
                GuardFinding(GuardCode.URL_UNRESOLVABLE, "resolving the URL's host name timed out")
            )
            return ()
        except Exception:
            # Any resolver failure fails closed; its text may name the host, so it is dropped.
            findings.append(
                GuardFinding(
                    GuardCode.URL_UNRESOLVABLE, "the URL's host name could not be resolved"
                )
            )
            return ()
        if not answers:
            findings.append(
                GuardFinding(
                    GuardCode.URL_UNRESOLVABLE, "the URL's host name resolved to no address"
                )
            )
            return ()
        addresses: list[str] = []
        reasons: list[str] = []
        for answer in answers:
            address = _parse_answer(answer)
            if address is None:
                findings.append(
                    GuardFinding(
                        GuardCode.URL_UNRESOLVABLE,
                        "the resolver returned something that is not an IP address",
                    )
                )
                return ()
            if str(address) not in addresses:
                addresses.append(str(address))
            reason = None if self.allow_private else _address_problem(address)
            if reason is not None and reason not in reasons:
                reasons.append(reason)
        findings.extend(
            GuardFinding(
                GuardCode.URL_PRIVATE_ADDRESS,
                f"the URL's host name resolves to an address in {reason}",
            )
            for reason in reasons
        )
        return tuple(addresses)


def _invalid(message: str) -> GuardFinding:
    return GuardFinding(GuardCode.URL_INVALID, message)


def text_problem(url: str, max_length: int) -> GuardFinding | None:
    """Characters no URL (or other URI) may carry unencoded, or on which parsers disagree."""
    if len(url) > max_length:
        return _invalid(f"the URL is longer than {max_length} characters")
    if "\\" in url:
        return _invalid("the URL contains a backslash, which WHATWG parsers read as '/'")
    for char in url:
        if (
            char <= " "
            or char == "\x7f"
            or (not char.isascii() and unicodedata.category(char)[0] in "CZ")
        ):
            return _invalid(
                "the URL contains whitespace, a control or an invisible character, which"
                " URL parsers strip or keep differently"
            )
    return None


def _split_host_port(text: str) -> tuple[str, str | None] | GuardFinding:
    """``host`` and ``port`` (``None`` without a colon); an IPv6 host keeps its brackets."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return _invalid("the URL's IPv6 address has no closing bracket")
        after = text[end + 1 :]
        if after and not after.startswith(":"):
            return _invalid("the URL has text after its IPv6 address")
        return text[: end + 1], (after[1:] if after else None)
    if text.count(":") > 1:
        return _invalid("the URL's host has colons: an IPv6 address must be in brackets")
    host, colon, port = text.partition(":")
    return host, (port if colon else None)


def _parse_host(text: str, findings: list[GuardFinding]) -> _Host | None:
    """The host as fetchers read it, with findings for what is refused or suspicious."""
    if not text:
        findings.append(_invalid("the URL has no host"))
        return None
    if text.startswith("["):
        return _parse_ipv6_literal(text[1:-1], findings)
    if "%" in text:
        findings.append(_invalid("the URL's host is percent-encoded, which WHATWG decodes"))
        return None
    if any(char in _IDNA_DEVIATIONS for char in text):
        findings.append(
            _invalid("the URL's host has a character IDNA 2003 and 2008 map differently")
        )
        return None
    name = _idna_name(text)
    if name is None:
        findings.append(_invalid("the URL's host is not a valid host name"))
        return None
    labels = name.split(".")
    if _is_number(labels[-1]):
        address = _whatwg_ipv4(labels)
        if address is None:
            findings.append(
                _invalid("the URL's host ends in a number but is not a valid IPv4 address")
            )
            return None
        if text != str(address):
            findings.append(
                GuardFinding(
                    GuardCode.URL_OBFUSCATED_ADDRESS,
                    "the URL's host is an IPv4 address in a non-standard spelling (decimal,"
                    " octal, hexadecimal, shortened or not ASCII), which fetchers still"
                    " read as an address",
                )
            )
        return _Host(str(address), address)
    return _Host(name, None)


def _parse_ipv6_literal(text: str, findings: list[GuardFinding]) -> _Host | None:
    address_text, percent, _ = text.partition("%")
    try:
        address = ipaddress.IPv6Address(address_text)
    except ValueError:
        findings.append(_invalid("the URL's bracketed host is not an IPv6 address"))
        return None
    if percent:
        # RFC 6874 zone ids: WHATWG refuses them, and only non-global addresses need one.
        findings.append(_invalid("the URL's IPv6 address has a zone identifier"))
    embedding = _literal_embedding(address)
    if embedding is not None:
        findings.append(
            GuardFinding(
                GuardCode.URL_OBFUSCATED_ADDRESS,
                f"the URL's host is an IPv4 address written as an {embedding} IPv6 address",
            )
        )
    return _Host(str(address), address)


def _literal_embedding(address: ipaddress.IPv6Address) -> str | None:
    """The name of the form when ``address`` is just an IPv4 address spelled as IPv6."""
    if address in _MAPPED:
        return "IPv4-mapped"
    if address in _TRANSLATED:
        return "IPv4-translated"
    if address in _COMPATIBLE and int(address) > 1:
        return "IPv4-compatible"
    return None


def _idna_name(text: str) -> str | None:
    """The lowercase ASCII (IDNA) form of a host name, one trailing dot dropped; or None."""
    if any(char in _IDNA_DEVIATIONS for char in text):
        return None
    try:
        name = text.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    if name.endswith("."):
        name = name[:-1]
    if not name or len(name) > 253:
        return None
    if not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return None
    return name


def _is_number(label: str) -> bool:
    """WHATWG's "ends in a number": a last label like this makes the host an IPv4 address."""
    return bool(_DECIMAL.fullmatch(label) or _HEX.fullmatch(label))


def _whatwg_ipv4(labels: list[str]) -> ipaddress.IPv4Address | None:
    """The address WHATWG (and ``inet_aton``) read from these labels, or None if invalid."""
    if len(labels) > 4:
        return None
    numbers: list[int] = []
    for label in labels:
        # Labels are at most 63 characters, so int() stays cheap.
        if _HEX.fullmatch(label):
            numbers.append(int(label[2:] or "0", 16))
        elif label.startswith("0"):
            if not _OCTAL.fullmatch(label):
                return None
            numbers.append(int(label, 8))
        elif _DECIMAL.fullmatch(label):
            numbers.append(int(label))
        else:
            return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for index, number in enumerate(leading):
        value += number * 256 ** (3 - index)
    return ipaddress.IPv4Address(value)


def _parse_answer(answer: object) -> IPAddress | None:
    """A resolver answer as an address; ``getaddrinfo`` appends ``%zone`` to scoped IPv6."""
    if not isinstance(answer, str):
        return None
    try:
        return ipaddress.ip_address(answer.partition("%")[0])
    except ValueError:
        return None


def _address_problem(address: IPAddress) -> str | None:
    """The refused range ``address`` is in, named for a message; None if it may be fetched."""
    if isinstance(address, ipaddress.IPv4Address):
        for network, label in _DENIED_V4:
            if address in network:
                return label
        return None if address.is_global else "a special-purpose range that is not global"
    for network6, label in _DENIED_V6:
        if address in network6:
            return label
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        form, ipv4 = embedded
        reason = _address_problem(ipv4)
        return None if reason is None else f"{reason}, carried in an IPv6 address ({form})"
    if address not in _GLOBAL_UNICAST:
        return "an IPv6 range outside global unicast (2000::/3)"
    return None if address.is_global else "a special-purpose range that is not global"


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address a connection to ``address`` may really reach, and the form's name."""
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    form = _literal_embedding(address)
    if form is not None:
        return form, low32
    if address in _NAT64:
        return "NAT64", low32
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    return None


def _host_rule(entry: str) -> _HostRule:
    text = entry.strip().lower()
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return _HostRule(str(ipaddress.ip_address(bare)), wildcard=False)
    except ValueError:
        pass
    wildcard = text.startswith("*.")
    name = _idna_name(text[2:] if wildcard else text)
    if name is None or _is_number(name.split(".")[-1]):
        raise ValueError(f"hosts: {entry!r} is not a host name, address or *.domain wildcard")
    return _HostRule(name, wildcard=wildcard)


def _entries(entries: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(entries[:limit])
    return shown if len(entries) <= limit else f"{shown} and {len(entries) - limit} more"
