"""The URL guard: every SSRF spelling refused, ordinary URLs untouched, nothing quoted.

No test sends traffic or asks DNS: names resolve through a fake resolver; the real resolver
is only asked for ``localhost``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictmcp.guards import GuardCode, GuardFinding
from strictmcp.guards.url import RedirectRefused, SystemResolver, UrlGuard

SECRET = "s3cr3t-T0KEN-4711"

C = GuardCode
PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"

DNS: dict[str, list[str]] = {
    "example.com": [PUBLIC_V4, PUBLIC_V6],
    "api.example.com": [PUBLIC_V4],
    "sub-domain_1.example.com": [PUBLIC_V4],
    "example.org": [PUBLIC_V4],
    "a.example.org": [PUBLIC_V4],
    "a.b.example.org": [PUBLIC_V4],
    "evil.example": [PUBLIC_V4],
    "xn--bcher-kva.de": ["81.169.145.1"],
    "xn--r8jz45g.xn--zckzah": [PUBLIC_V4],
    "rebind.example": [PUBLIC_V4, "10.0.0.7"],
    "private.example": ["192.168.1.10"],
    "metadata.example": ["169.254.169.254"],
    "mapped.example": ["::ffff:127.0.0.1"],
    "scoped.example": ["fe80::1%eth0"],
    "ula.example": ["fd00:ec2::254"],
    "empty.example": [],
    "garbage.example": ["not-an-address"],
}


class FakeResolver:
    """Answers from ``DNS``, like NXDOMAIN for anything else; remembers every question."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, host: str) -> Sequence[str]:
        self.asked.append(host)
        if host == "slow.example":
            raise TimeoutError("timed out")
        if host not in DNS:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} not known")
        return DNS[host]


def guard(**options: Any) -> UrlGuard:
    options.setdefault("resolver", FakeResolver())
    return UrlGuard(**options)


def codes(g: UrlGuard, url: Any) -> set[str]:
    """The codes ``g`` finds, after checking no message quotes the URL or its parts."""
    findings = g.check(url)
    assert_quiet(findings, url)
    return {f.code for f in findings}


def assert_quiet(findings: list[GuardFinding], url: Any) -> None:
    for finding in findings:
        assert SECRET not in finding.message
        if isinstance(url, str) and url:
            assert url not in finding.message


HTTP = ("http", "https")

BENIGN = [
    "https://example.com",
    "https://example.com/",
    "https://example.com:8443/path/to/thing?q=1&r=two#frag",
    "https://api.example.com/v1/items?filter=a%20b&page=2",
    "https://api.example.com:443/",
    "HTTPS://EXAMPLE.COM/Path",
    "https://example.com./",
    "https://example.com:/",
    "https://sub-domain_1.example.com/",
    "https://example.com/@me",
    "https://example.com/?email=someone@example.org",
    "https://example.com/path;params?x=%41#a@b",
    "https://example.com/ümlaut/straße?q=日本",
    "https://bücher.de/",
    "https://BÜCHER.de/",
    "https://xn--bcher-kva.de/",
    "https://例え.テスト/",
    "https://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com/",  # fullwidth
    "https://example。com/",
    f"https://{PUBLIC_V4}/",
    f"https://{PUBLIC_V4}:8443/x",
    f"https://[{PUBLIC_V6}]/",
    f"https://[{PUBLIC_V6.upper()}]:8443/",
    "https://[64:ff9b::93.184.216.34]/",  # NAT64 of a public address
    "https://[2002:5db8:d822::1]/",  # 6to4 of a public address
    "https://8.8.8.8/",
]


@pytest.mark.parametrize("url", BENIGN)
def test_ordinary_urls_pass(url: str) -> None:
    assert guard().check(url) == []


def test_ordinary_urls_pass_an_allowlist() -> None:
    names = ("example.com", "*.example.com", "*.example.org", "bücher.de", "例え.テスト")
    addresses = (PUBLIC_V4, f"[{PUBLIC_V6}]", "[64:ff9b::5db8:d822]", "2002:5db8:d822::1")
    g = guard(hosts=(*names, *addresses, "8.8.8.8"))
    for url in BENIGN:
        assert g.check(url) == [], url


OBFUSCATED_IPV4 = [
    "http://2130706433/",  # decimal 127.0.0.1
    "http://017700000001/",  # octal
    "http://0x7f000001/",  # hex
    "http://0x7F000001/",
    "http://0177.0.0.1/",
    "http://0x7f.0.0.1/",
    "http://0x7f.1/",  # hex, short
    "http://127.1/",  # short
    "http://127.0.1/",
    "http://0177.0x0.1/",  # mixed
    "http://127.000.000.001/",  # zero-padded: octal to WHATWG
    "http://127.0.0.1./",  # trailing dot
    "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",  # fullwidth digits: browsers map them
    "http://127。0。0。1/",  # ideographic full stops
    "http://\U0001d7cf\U0001d7d0\U0001d7d5.0.0.1/",  # mathematical digits: NFKC maps them
    "http://0x0a.0.0.1/",  # 10.0.0.1
    "http://3232235521/",  # 192.168.0.1
    "http://0/",  # 0.0.0.0
    "http://0x/",  # 0.0.0.0: an empty hex number is zero
    "http://2852039166/",  # 169.254.169.254
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://169.254.43518/",
]


@pytest.mark.parametrize("url", OBFUSCATED_IPV4)
def test_obfuscated_ipv4_is_normalized_and_refused(url: str) -> None:
    assert codes(guard(schemes=HTTP), f"{url}?token={SECRET}") == {
        C.URL_OBFUSCATED_ADDRESS,
        C.URL_PRIVATE_ADDRESS,
    }


def test_obfuscation_is_an_error_even_for_a_public_address() -> None:
    # 010.0.0.1 is 8.0.0.1 to WHATWG and inet_aton and 10.0.0.1 to a decimal reader.
    findings = guard(schemes=HTTP).check("http://010.0.0.1/")
    assert [f.code for f in findings] == [C.URL_OBFUSCATED_ADDRESS]
    assert findings[0].severity.value == "error"
    assert {f.code for f in guard(allow_private=True).check("https://0x7f.1/")} == {
        C.URL_OBFUSCATED_ADDRESS
    }


PRIVATE_LITERALS = [
    ("127.0.0.1", "127.0.0.0/8"),
    ("127.255.255.254", "loopback"),
    ("10.0.0.1", "10.0.0.0/8"),
    ("172.16.0.1", "172.16.0.0/12"),
    ("172.31.255.255", "RFC 1918"),
    ("192.168.1.1", "192.168.0.0/16"),
    ("169.254.169.254", "metadata"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.100.100.200", "100.64.0.0/10"),  # Alibaba Cloud metadata
    ("192.0.0.192", "192.0.0.0/24"),  # Oracle Cloud metadata
    ("192.0.0.9", "192.0.0.0/24"),
    ("0.0.0.0", "0.0.0.0/8"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("198.18.0.1", "benchmarking"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.1", "documentation"),
    ("203.0.113.1", "documentation"),
    ("192.88.99.1", "6to4 relay"),
    ("[::1]", "loopback"),
    ("[::]", "unspecified"),
    ("[0:0:0:0:0:0:0:1]", "loopback"),
    ("[fe80::1]", "link-local"),
    ("[fc00::1]", "unique local"),
    ("[fd00:ec2::254]", "unique local"),  # AWS metadata over IPv6
    ("[fec0::1]", "site-local"),
    ("[ff02::1]", "multicast"),
    ("[ff0e::1]", "multicast"),
    ("[2001:db8::1]", "documentation"),
    ("[3fff::1]", "documentation"),
    ("[5f00::1]", "SRv6"),
    ("[100::1]", "discard"),
    ("[2001:0:4136:e378:8000:63bf:3fff:fdd2]", "Teredo"),
    ("[2001:2::1]", "benchmarking"),
    ("[64:ff9b::7f00:1]", "127.0.0.0/8 (loopback), carried in an IPv6 address (NAT64)"),
    ("[64:ff9b::169.254.169.254]", "NAT64"),
    ("[64:ff9b:1::a00:1]", "local-use NAT64"),
    ("[2002:7f00:1::1]", "127.0.0.0/8 (loopback), carried in an IPv6 address (6to4)"),
    ("[2002:a9fe:a9fe::]", "6to4"),
    ("[4000::1]", "2000::/3"),
    ("[::8:8:8:8]", "2000::/3"),
]


@pytest.mark.parametrize(("host", "range_text"), PRIVATE_LITERALS)
def test_non_global_addresses_are_refused_naming_the_range(host: str, range_text: str) -> None:
    url = f"http://{host}:8080/?token={SECRET}"
    findings = guard(schemes=HTTP).check(url)
    assert_quiet(findings, url)  # the range named comes from the guard, not the URL
    assert [f.code for f in findings] == [C.URL_PRIVATE_ADDRESS]
    assert range_text in findings[0].message
    assert guard(schemes=HTTP, allow_private=True).check(f"http://{host}/") == []


IPV4_IN_IPV6 = [
    ("[::ffff:127.0.0.1]", "IPv4-mapped"),
    ("[::ffff:7f00:1]", "IPv4-mapped"),
    ("[::FFFF:169.254.169.254]", "IPv4-mapped"),
    ("[0:0:0:0:0:ffff:a00:1]", "IPv4-mapped"),
    ("[::127.0.0.1]", "IPv4-compatible"),
    ("[::a00:1]", "IPv4-compatible"),
    ("[::ffff:0:10.0.0.1]", "IPv4-translated"),
]


@pytest.mark.parametrize(("host", "form"), IPV4_IN_IPV6)
def test_ipv4_written_as_ipv6_is_obfuscation_and_judged_as_ipv4(host: str, form: str) -> None:
    findings = guard(schemes=HTTP).check(f"http://{host}/")
    assert [f.code for f in findings] == [C.URL_OBFUSCATED_ADDRESS, C.URL_PRIVATE_ADDRESS]
    assert form in findings[0].message
    assert form in findings[1].message


def test_a_public_ipv4_written_as_ipv6_is_still_obfuscation() -> None:
    assert codes(guard(), "https://[::ffff:8.8.8.8]/") == {C.URL_OBFUSCATED_ADDRESS}


@pytest.mark.parametrize("host", ["[fe80::1%25eth0]", "[fe80::1%eth0]", "[2001:4860::1%251]"])
def test_zone_identifiers_are_refused(host: str) -> None:
    assert C.URL_INVALID in codes(guard(), f"https://{host}/")


USERINFO = [
    "https://trusted.example@evil.example/",
    f"https://user:{SECRET}@example.com/",
    f"https://{SECRET}@example.com/",
    "https://example.com:443@evil.example/",
    "https://@example.com/",
    "https://a@b@example.com/",
    "https://127.0.0.1%2f@evil.example/",
]


@pytest.mark.parametrize("url", USERINFO)
def test_userinfo_is_refused(url: str) -> None:
    assert C.URL_USERINFO in codes(guard(), url)


def test_userinfo_tricks_name_the_real_host_for_the_allowlist() -> None:
    g = guard(hosts=("trusted.example", "example.com"))
    assert codes(g, "https://trusted.example@evil.example/") == {
        C.URL_USERINFO,
        C.URL_HOST_NOT_ALLOWED,
    }
    # '#', '?' and '/' end the authority: the host is the part before them.
    for url in (
        "https://evil.example#@trusted.example",
        "https://evil.example?@trusted.example",
        "https://evil.example/@trusted.example",
        "https://evil.example#.trusted.example",
    ):
        assert codes(g, url) == {C.URL_HOST_NOT_ALLOWED}, url


def test_allow_userinfo_allows_one_at_sign() -> None:
    g = guard(allow_userinfo=True, hosts=("example.com",))
    assert g.check(f"https://user:{SECRET}@example.com/") == []
    assert codes(g, "https://a@b@example.com/") == {C.URL_USERINFO}
    assert codes(g, "https://example.com@evil.example/") == {C.URL_HOST_NOT_ALLOWED}


MALFORMED = [
    "https://evil.example\\@example.com/",  # WHATWG: host evil.example; urllib: example.com
    "https://example.com\\evil.example/",
    "https:\\\\example.com/",
    "https:/\\example.com/",
    "https:/example.com/",
    "http:/example.com",
    "https:example.com",
    "https:///example.com",
    "https:////example.com",
    "//example.com/",
    "example.com",
    "/relative/path",
    "",
    "https://",
    "https:///",
    "https://:443/",
    "https://?q",
    "https://#f",
    " https://example.com/",
    "https://example.com/ ",
    "https://exa mple.com/",
    "https://exa\tmple.com/",  # WHATWG strips the tab: example.com
    "https://example.com\n.evil.example/",
    "https://example.com/\r\n",
    "https://example.com/\x00",
    "https://example.com\x7f/",
    "https://example.com\u200b/",  # zero-width space
    "https://ex\u00adample.com/",  # soft hyphen: IDNA drops it
    "https://example.com\u202e/",  # right-to-left override
    "https://example.com\u3000/",  # ideographic space
    "https://%65xample.com/",  # WHATWG decodes the host
    "https://example%2ecom/",
    "https://exa*mple.com/",
    "https://exa<mple.com/",
    "https://a..b.example/",
    "https://.example.com/",
    "https://example.com../",
    "https://" + "a" * 64 + ".example/",
    "https://" + "a." * 127 + "example/",
    "https://straße.example/",  # IDNA 2003: strasse; IDNA 2008: xn--strae-oqa
    "https://STRAẞE.example/",
    "https://ς.example/",
    "https://1.2.3.4.5/",
    "https://256.0.0.1/",
    "https://1.2.3.256/",
    "https://4294967296/",
    "https://0x100000000/",
    "https://08.0.0.1/",  # not octal, not decimal to WHATWG
    "https://0.0.0.09/",
    "https://example.123/",  # ends in a number: WHATWG reads an IPv4 address
    "https://example.0x1/",
    "https://::1/",
    "https://[::1/",
    "https://[::1]x/",
    "https://[127.0.0.1]/",
    "https://[v1.fe]/",
    "https://[]/",
    "https://example.com:abc/",
    "https://example.com:0/",
    "https://example.com:65536/",
    "https://example.com:+443/",
    "https://example.com:\uff14\uff14\uff13/",  # fullwidth digits
    "https://example.com:443:443/",
    "https://example.com:000000443/",
    "https://example.com/" + "a" * 9000,
]


@pytest.mark.parametrize("url", MALFORMED)
def test_malformed_and_ambiguous_urls_are_invalid(url: str) -> None:
    found = codes(guard(), url)
    assert C.URL_INVALID in found


def test_an_over_long_url_is_refused_by_the_configured_bound() -> None:
    url = "https://example.com/" + "a" * 80
    assert codes(guard(max_length=50), url) == {C.URL_INVALID}
    assert guard(max_length=200).check(url) == []


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/",
        "ftp://example.com/",
        "gopher://example.com:70/_GET",
        "file://example.com/etc/passwd",
        "dict://example.com:11211/stat",
        "ws://example.com/",
    ],
)
def test_schemes_outside_the_list_are_refused(url: str) -> None:
    assert codes(guard(), url) == {C.URL_SCHEME_NOT_ALLOWED}


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "javascript:alert(1)", "data:text/html,hi", "mailto:a@b.c"]
)
def test_schemes_without_a_host_are_refused_twice(url: str) -> None:
    assert codes(guard(), url) == {C.URL_SCHEME_NOT_ALLOWED, C.URL_INVALID}


def test_allowed_schemes_are_case_insensitive_in_urls() -> None:
    g = guard(schemes=("https", "wss"))
    assert g.check("WSS://example.com/socket") == []
    assert g.check("hTTpS://example.com/") == []


LOCAL_NAMES = [
    "localhost",
    "LOCALHOST",
    "localhost.",
    "foo.localhost",
    "printer.local",
    "metadata.google.internal",
    "router.home.arpa",
    "intranet",
    "metadata",
]


@pytest.mark.parametrize("host", LOCAL_NAMES)
def test_local_names_are_refused_without_asking_dns(host: str) -> None:
    resolver = FakeResolver()
    assert codes(guard(resolver=resolver), f"https://{host}/") == {C.URL_PRIVATE_ADDRESS}
    assert codes(guard(resolve=False), f"https://{host}/") == {C.URL_PRIVATE_ADDRESS}
    assert resolver.asked == []


@pytest.mark.parametrize(
    ("host", "code", "text"),
    [
        ("rebind.example", C.URL_PRIVATE_ADDRESS, "10.0.0.0/8"),
        ("private.example", C.URL_PRIVATE_ADDRESS, "192.168.0.0/16"),
        ("metadata.example", C.URL_PRIVATE_ADDRESS, "169.254.0.0/16"),
        ("mapped.example", C.URL_PRIVATE_ADDRESS, "127.0.0.0/8"),
        ("scoped.example", C.URL_PRIVATE_ADDRESS, "fe80::/10"),
        ("ula.example", C.URL_PRIVATE_ADDRESS, "fc00::/7"),
        ("nxdomain.example", C.URL_UNRESOLVABLE, "could not be resolved"),
        ("slow.example", C.URL_UNRESOLVABLE, "timed out"),
        ("empty.example", C.URL_UNRESOLVABLE, "no address"),
        ("garbage.example", C.URL_UNRESOLVABLE, "not an IP address"),
    ],
)
def test_resolution_refuses_any_bad_answer(host: str, code: GuardCode, text: str) -> None:
    findings, addresses = guard().check_resolved(f"https://{host}/?token={SECRET}")
    assert_quiet(findings, host)
    assert [f.code for f in findings] == [code]
    assert text in findings[0].message
    assert findings[0].severity.value == "error"
    assert addresses == ()


def test_resolver_failures_never_reach_the_message() -> None:
    def leaky(host: str) -> Sequence[str]:
        raise RuntimeError(f"lookup of {host} failed: {SECRET}")

    findings = guard(resolver=leaky).check(f"https://{SECRET}.example/")
    assert [f.code for f in findings] == [C.URL_UNRESOLVABLE]
    assert_quiet(findings, SECRET)


def test_allow_private_accepts_private_answers() -> None:
    assert guard(allow_private=True).check("https://rebind.example/") == []
    assert guard(allow_private=True).check("https://localhost/") != []  # not in the fake DNS


def test_check_resolved_returns_the_addresses_to_pin() -> None:
    g = guard()
    assert g.check_resolved("https://example.com/") == ([], (PUBLIC_V4, PUBLIC_V6))
    assert g.check_resolved(f"https://[{PUBLIC_V6.upper()}]/") == ([], (PUBLIC_V6,))
    assert g.check_resolved("https://8.8.8.8/") == ([], ("8.8.8.8",))
    assert guard(resolve=False).check_resolved("https://example.com/") == ([], ())
    findings, addresses = g.check_resolved("https://0x08080808/")
    assert findings
    assert addresses == ()


def test_refused_urls_never_cause_a_dns_query() -> None:
    # A name can carry data to whoever runs its DNS zone: only a URL that passed is resolved.
    resolver = FakeResolver()
    g = guard(resolver=resolver, hosts=("example.com",))
    for url in (
        f"https://{SECRET}.evil.example/",
        "http://example.com/",
        "https://user@example.com/",
        "https://example.com:99999/",
    ):
        assert g.check(url) != []
    assert resolver.asked == []
    assert g.check("https://EXAMPLE.com./") == []
    assert resolver.asked == ["example.com"]


def test_resolve_false_does_not_resolve() -> None:
    resolver = FakeResolver()
    assert guard(resolver=resolver, resolve=False).check("https://nxdomain.example/") == []
    assert resolver.asked == []


def test_names_are_resolved_in_their_ascii_form() -> None:
    resolver = FakeResolver()
    assert guard(resolver=resolver).check("https://BÜCHER.de./") == []
    assert resolver.asked == ["xn--bcher-kva.de"]


def test_host_allowlist_exact_wildcard_and_addresses() -> None:
    g = guard(hosts=("example.com", "*.example.org", PUBLIC_V4, f"[{PUBLIC_V6}]", "bücher.de"))
    for url in (
        "https://example.com/",
        "https://EXAMPLE.COM./",
        "https://a.example.org/",
        "https://a.b.example.org/",
        f"https://{PUBLIC_V4}/",
        f"https://[{PUBLIC_V6}]/",
        "https://xn--bcher-kva.de/",
        "https://BÜCHER.de/",
    ):
        assert g.check(url) == [], url
    for url in (
        "https://example.org/",  # a wildcard means strict subdomains
        "https://evilexample.org/",
        "https://a.example.com/",  # an exact entry has no subdomains
        "https://example.com.evil.example/",
        "https://notexample.com/",
        "https://8.8.8.8/",
        "https://[64:ff9b::5db8:d822]/",  # the same IPv4 address, but another host
    ):
        findings = g.check(f"{url}?token={SECRET}")
        assert_quiet(findings, url)
        assert [f.code for f in findings] == [C.URL_HOST_NOT_ALLOWED], url
        assert "example.com, *.example.org" in findings[0].message


def test_the_allowlist_does_not_lift_the_address_checks() -> None:
    g = guard(hosts=("private.example", "10.0.0.1"), schemes=HTTP)
    assert codes(g, "https://private.example/") == {C.URL_PRIVATE_ADDRESS}
    assert codes(g, "http://10.0.0.1/") == {C.URL_PRIVATE_ADDRESS}
    assert codes(g, "http://0x0a000001/") == {C.URL_OBFUSCATED_ADDRESS, C.URL_PRIVATE_ADDRESS}


def test_an_empty_allowlist_allows_nothing() -> None:
    assert codes(guard(hosts=()), "https://example.com/") == {C.URL_HOST_NOT_ALLOWED}


def test_ports() -> None:
    g = guard(allow_ports=(443, 8443), schemes=HTTP)
    assert g.check("https://example.com/") == []
    assert g.check("https://example.com:443/") == []
    assert g.check("https://example.com:8443/") == []
    assert codes(g, "https://example.com:22/") == {C.URL_PORT_NOT_ALLOWED}
    assert codes(g, "http://example.com/") == {C.URL_PORT_NOT_ALLOWED}
    assert codes(guard(schemes=("gopher",), allow_ports=(70,)), "gopher://example.com/") == {
        C.URL_PORT_NOT_ALLOWED
    }
    assert "443, 8443" in g.check("https://example.com:22/")[0].message


@pytest.mark.parametrize(
    "options",
    [
        {"hosts": "example.com"},
        {"hosts": ("exa mple.com",)},
        {"hosts": ("*.1",)},
        {"hosts": ("1.2.3.4.5",)},
        {"hosts": ("",)},
        {"hosts": (1,)},
        {"schemes": "https"},
        {"schemes": ("HTTPS",)},
        {"schemes": ("ht tp",)},
        {"allow_ports": (0,)},
        {"allow_ports": (65536,)},
        {"max_length": 0},
    ],
)
def test_invalid_configuration_is_refused_at_construction(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        UrlGuard(**options)


@pytest.mark.parametrize("value", [None, 1, 1.5, b"https://example.com/", ["https://x"], {}])
def test_non_strings_are_reported(value: Any) -> None:
    assert codes(guard(), value) == {C.NOT_A_STRING}


def test_check_redirect_applies_every_rule_to_the_target() -> None:
    g = guard(hosts=("example.com", "*.example.com", "private.example"))
    origin = f"https://example.com/start?token={SECRET}"
    for target in ("/next", "next", "../up", "?page=2", "https://api.example.com/v1", ""):
        assert g.check_redirect(origin, target) == [], target
    refused: list[tuple[Any, GuardCode]] = [
        ("http://169.254.169.254/latest/meta-data/", C.URL_SCHEME_NOT_ALLOWED),
        ("https://169.254.169.254/", C.URL_PRIVATE_ADDRESS),
        ("//127.0.0.1/", C.URL_PRIVATE_ADDRESS),
        ("//evil.example/", C.URL_HOST_NOT_ALLOWED),
        ("https://2130706433/", C.URL_OBFUSCATED_ADDRESS),
        ("https://example.com@evil.example/", C.URL_USERINFO),
        ("https:evil.example", C.URL_INVALID),
        ("/\\evil.example", C.URL_INVALID),
        ("\t//evil.example", C.URL_INVALID),
        ("https://private.example/", C.URL_PRIVATE_ADDRESS),
        (None, C.NOT_A_STRING),
    ]
    for target, reason in refused:
        findings = g.check_redirect(origin, target)
        assert_quiet(findings, target)
        assert findings, target
        assert {f.code for f in findings} == {C.URL_REDIRECT_NOT_ALLOWED}, target
        assert f"[{reason.value}]" in " ".join(f.message for f in findings), target


def test_a_relative_target_that_cannot_be_joined_is_refused() -> None:
    findings = guard().check_redirect("https://[::1/", "/x")
    assert [f.code for f in findings] == [C.URL_REDIRECT_NOT_ALLOWED]


def response(status: int, location: str | None, url: str = "https://example.com/a") -> Any:
    headers = {} if location is None else {"location": location}
    return SimpleNamespace(status_code=status, headers=headers, request=SimpleNamespace(url=url))


def test_redirect_hook_stops_a_refused_redirect() -> None:
    hook = guard().redirect_hook()
    hook(response(200, None))
    hook(response(302, "/elsewhere"))
    hook(response(301, "https://api.example.com/"))
    hook(response(304, "http://127.0.0.1/"))  # clients do not follow a 304
    hook(response(201, "http://127.0.0.1/"))  # nor a Location on a success
    for status in (301, 302, 303, 307, 308):
        with pytest.raises(RedirectRefused) as refused:
            hook(response(status, f"http://127.0.0.1/?token={SECRET}"), "extra", key="word")
        assert {f.code for f in refused.value.findings} == {C.URL_REDIRECT_NOT_ALLOWED}
        assert SECRET not in str(refused.value)


def test_the_system_resolver_answers_for_localhost() -> None:
    addresses = SystemResolver(timeout=5)("localhost")
    assert addresses
    assert all(a.startswith("127.") or a == "::1" for a in addresses)


def test_the_system_resolver_gives_up_after_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    entered = threading.Semaphore(0)
    release = threading.Event()

    # The fake lookup hangs far longer than any bound below, so that a bound met says the
    # resolver gave up, however slow the loaded machine; it is released at the end.
    def hang(*args: Any, **kwargs: Any) -> Any:
        entered.release()
        release.wait(60)
        return []

    monkeypatch.setattr(socket, "getaddrinfo", hang)
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            SystemResolver(timeout=0.05)("hang.invalid")
        assert time.monotonic() - started < 30
        guard = UrlGuard(resolver=SystemResolver(timeout=0.05))
        assert codes(guard, "https://hang.invalid/") == {C.URL_UNRESOLVABLE}
        # Both abandoned lookups reached the fake before it is unpatched: no real query.
        assert entered.acquire(timeout=5)
        assert entered.acquire(timeout=5)
    finally:
        release.set()


def test_the_system_resolver_reports_failure_as_os_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(OSError, match="not known"):
        SystemResolver()("nxdomain.invalid")
    assert codes(UrlGuard(), "https://nxdomain.invalid/") == {C.URL_UNRESOLVABLE}


URL_ALPHABET = st.sampled_from(
    [*"htps:/[]@#?%.\\-_0x7f1:", "\t", " ", "\u3002", "\uff10", "ß", "é", "::ffff:", "127"]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.lists(URL_ALPHABET, max_size=40).map("".join)))
def test_check_never_raises(text: str) -> None:
    g = guard(schemes=HTTP)
    for url in (text, "https://" + text, "http://" + text + "/"):
        findings = g.check(url)
        assert all(isinstance(f, GuardFinding) for f in findings)
        g.check_redirect("https://example.com/", text)


def test_guard_is_frozen_and_kind_is_url() -> None:
    g = UrlGuard()
    assert g.kind == "url"
    with pytest.raises(AttributeError):
        g.resolve = False  # type: ignore[misc]
