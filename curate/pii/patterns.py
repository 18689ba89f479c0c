"""What counts as an address: one precise pattern per kind (Python `re`), one cheap RE2 prefilter per kind
(pyarrow runs it over a whole batch, so the precise pattern only sees candidate documents), and the exceptions.

Exceptions (never edited): IP addresses that are not global (private, loopback, link-local, documentation and
other reserved ranges, by `ipaddress`) or are multicast groups, unless `public_ips_only: false`; e-mail addresses at example domains
(`example.com/.net/.org`, the `.example .test .invalid .localhost` TLDs, RFC 2606) or at a domain the user keeps;
image names with a scale suffix (`logo@2x.png`); dotted quads right after a version marker (`version 1.2.3.4`,
`<version>1.2.3.4`, `==1.2.3.4`, `Chrome/1.2.3.4`, `pkg-1.2.3.4`), before an archive suffix (`1.2.3.4.tar.gz`) or
inside a longer dotted number (`1.2.3.4.5`); compressed IPv6 spellings with no
digit (`dead::beef`, code more often than an address); and the placeholders themselves, so a second pass is a
no-op. Strings without a domain (`user@localhost`, `foo@bar`), decorators (`@property`) and handles (`@user`)
never match the e-mail pattern at all.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Callable

_LOCAL = r"[A-Za-z0-9_%+-]+(?:\.[A-Za-z0-9_%+-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
EMAIL = re.compile(rf"(?<![\w.%+-]){_LOCAL}@((?:{_LABEL}\.)+(?:[A-Za-z]{{2,63}}|xn--[A-Za-z0-9-]{{1,59}}))(?![\w-]|\.[A-Za-z0-9])")
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_V4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
IPV4 = re.compile(rf"(?<![\w.]){_V4}(?![\w]|\.\d)")
_H = r"[0-9A-Fa-f]{1,4}"
IPV6 = re.compile(r"(?<![\w:.])(?:" + "|".join([
    rf"(?:{_H}:){{7}}{_H}",                                 # full
    rf"(?:{_H}:){{6}}{_V4}",                                # full, IPv4 at the end
    rf"(?:(?:{_H}:){{1,5}}|:):(?:{_H}:){{0,4}}{_V4}",         # compressed, IPv4 at the end (::ffff:1.2.3.4)
    *(rf"(?:{_H}:){{1,{7 - k}}}(?::{_H}){{{k}}}" for k in range(6, 0, -1)),   # compressed: k groups after ::
    rf"(?:{_H}:){{1,7}}:",                                  # fe80::
    rf"::(?:{_H}:){{0,6}}{_H}",                             # ::1
]) + r")(?![\w:]|\.\d)")
PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?|\d{2,4}[ .-])\d{3,4}[ .-]?\d{3,4}(?![\w])")

PREFILTER = {   # RE2 (pyarrow.compute.match_substring_regex): true for every document the precise pattern can match
    "email": r"[A-Za-z0-9_%+-]@[A-Za-z0-9]",
    "ipv4": r"\d\.\d{1,3}\.\d{1,3}\.\d",
    "ipv6": r"[0-9A-Fa-f]::|::[0-9A-Fa-f]|(?:[0-9A-Fa-f]{1,4}:){3}[0-9A-Fa-f]",   # not times (12:30:45)
    "phone": r"\d{3,4}[ .-]?\d{3,4}",
}
PATTERNS = {"email": EMAIL, "ipv4": IPV4, "ipv6": IPV6, "phone": PHONE}
# where a match can be (Python `re` is fast on these, slow on the patterns above): each `@`, from up to 65 characters
# before it (a local part is at most 64, RFC 5321) to the next whitespace; each `.d.d.d`, from up to 3 characters
# before it (the first number); each `:`, from up to 4 characters before it (the first group) over 48 (an IPv6 is
# at most 45 characters long). Finding `@` in Python is cheaper than a second RE2 pass, so e-mail skips its own.
ANCHORS = {"email": (re.compile("@"), 65, None, False), "ipv4": (re.compile(r"\.\d{1,3}\.\d{1,3}\.\d"), 3, 20),
           "ipv6": (re.compile(":"), 4, 48)}
EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org", "example", "test", "invalid", "localhost")
SCALED_IMAGE = re.compile(r"\d+(?:\.\d+)?x\.(?:png|jpe?g|gif|svg|webp|avif)$", re.I)
VERSION_BEFORE = re.compile(r"(?:(?:version|ver\.|release|build|revision|firmware)_*[\s:=\"'>]*|(?:[=<>~^!]=|[\^~])\s*|[A-Za-z][/-])$", re.I)
VERSION_AFTER = re.compile(r"\.(?:tar|t?gz|zip|jar|whl|exe|dmg|deb|rpm|msi|apk|bz2|xz|7z)\b", re.I)   # pkg-1.2.3.4.tar.gz

# datatrove's PIIFormatter (FineWeb-2): e-mails at domains kept for examples, IPs that answered no ping when listed
DEFAULT_PLACEHOLDERS = {
    "email": ["email@example.com", "firstname.lastname@example.org"],
    "ipv4": ["22.214.171.124", "126.96.36.199", "188.8.131.52", "184.108.40.206", "220.127.116.11", "18.104.22.168"],
    "ipv6": ["2001:db8::1", "2001:db8::2"],    # the documentation prefix (RFC 3849), never edited itself
    "phone": ["+1 555 0100"],
}
KINDS = ("email", "ipv4", "ipv6", "phone")


@dataclass(frozen=True)
class Kind:
    """One kind of span: how to find it (precise and prefilter) and which matches are exceptions."""

    name: str
    pattern: re.Pattern
    prefilter: str | None               # None: every document is a candidate
    placeholders: tuple[str, ...]
    accept: Callable[[str, re.Match], bool] | None = None
    anchor: re.Pattern | None = None    # matches are looked for only around this pattern's hits (see ANCHORS)
    before: int = 0                     # how far before its anchor a match may start
    after: int | None = None            # how far after the anchor's start it may end (None: to the next whitespace)
    own_pass: bool = True               # after the batch's RE2 pass for all kinds, one of its own on the candidates


def public_ip(public_only: bool) -> Callable[[str, re.Match], bool]:
    def accept(text: str, m: re.Match) -> bool:
        try:
            ip = ipaddress.ip_address(m.group(0))
        except ValueError:
            return False
        return (ip.is_global and not ip.is_multicast) or not public_only   # a multicast group is no one's address
    return accept


def ipv4(public_only: bool) -> Callable[[str, re.Match], bool]:
    is_public = public_ip(public_only)

    def accept(text: str, m: re.Match) -> bool:
        return is_public(text, m) and not VERSION_BEFORE.search(text, max(0, m.start() - 24), m.start()) \
            and not VERSION_AFTER.match(text, m.end())
    return accept


def ipv6(public_only: bool) -> Callable[[str, re.Match], bool]:
    is_public = public_ip(public_only)

    def accept(text: str, m: re.Match) -> bool:
        span = m.group(0)
        return ("::" not in span or any(c.isdigit() for c in span)) and is_public(text, m)
    return accept


def email(keep_domains: tuple[str, ...]) -> Callable[[str, re.Match], bool]:
    kept = tuple(d.lower().lstrip(".") for d in (*EXAMPLE_DOMAINS, *keep_domains))

    def accept(text: str, m: re.Match) -> bool:
        domain = m.group(1).lower()
        return not any(domain == d or domain.endswith("." + d) for d in kept) and not SCALED_IMAGE.match(domain)
    return accept


def digits(low: int, high: int) -> Callable[[str, re.Match], bool]:
    def accept(text: str, m: re.Match) -> bool:
        return low <= sum(c.isdigit() for c in m.group(0)) <= high
    return accept


def build_kinds(kinds: list[str], patterns: dict[str, str], placeholders: dict, public_only: bool,
                keep_domains: list[str]) -> list[Kind]:
    """The kinds a pii step looks for, in the order their spans win an overlap (built-ins first, then the user's)."""
    accept = {"email": email(tuple(keep_domains)), "ipv4": ipv4(public_only), "ipv6": ipv6(public_only), "phone": digits(9, 15)}
    out = [Kind(k, PATTERNS[k], PREFILTER[k], _placeholders(placeholders, k), accept[k], *ANCHORS.get(k, ()))
           for k in KINDS if k in kinds]
    for name, regex in sorted(patterns.items()):
        out.append(Kind(name, re.compile(regex), regex if re2_compatible(regex) else None, _placeholders(placeholders, name)))
    return out


def _placeholders(placeholders: dict, kind: str) -> tuple[str, ...]:
    value = placeholders.get(kind, DEFAULT_PLACEHOLDERS.get(kind, f"<{kind}>"))
    return (value,) if isinstance(value, str) else tuple(value)


def re2_compatible(regex: str) -> bool:
    """Whether RE2 (pyarrow) matches at least what Python's `re` matches with this pattern, so it can prefilter:
    ASCII only, none of the classes and flags whose meaning differs (RE2's are ASCII, Python's Unicode), and
    RE2 takes it (no look-arounds or back-references). Other patterns run in Python on every document."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not regex.isascii() or re.search(r"\\[wWbBdDsS]|\(\?[a-zA-Z]*[iu]", regex):
        return False
    try:
        pc.match_substring_regex(pa.array([""]), regex)
        return True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
