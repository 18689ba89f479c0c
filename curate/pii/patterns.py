"""What counts as an address: one precise pattern per kind (Python `re`), one cheap RE2 prefilter per kind
(pyarrow runs it over a whole batch, so the precise pattern only sees candidate documents), and the exceptions.
Your own patterns are in curate/pii/user.py.

E-mail, chosen so that a missed address is rarer than a redacted look-alike: local parts and domains in any script
(`jörg@müller.de`, `用户@例子.中国`, RFC 6531 and IDNA), the fullwidth and small at signs (`＠` `﹫`) and the
fullwidth dots IDNA reads as dots (`．` `｡`); characters that print as nothing (zero-width space and joiners, soft
hyphen, direction marks, BOM) are skipped inside an address, and the span covers them. An address ends at the
last label that can be a top-level domain: `john@gmail.com.2020` and `a@b.com.k1` (sentences joined by crawling)
give `john@gmail.com` and `a@b.com`, an ASCII top-level domain ends before a non-ASCII letter (`a@b.com欢迎`), and
in a script written without spaces the address takes the letters around it (over-redaction, never a miss). The
local part is at most 64 characters and the domain at most 253 (RFC 5321, 1035): a longer run before the `@` is
redacted from its last 64 characters, a longer one after it through its first 254.

Exceptions (never edited): IP addresses that are not global (private, loopback, link-local, documentation and
other reserved ranges, by `ipaddress`) or are multicast groups, unless `public_ips_only: false`; e-mail addresses at example domains
(`example.com/.net/.org`, the `.example .test .invalid .localhost` TLDs, RFC 2606) or at a domain the user keeps;
image names with a scale suffix (`logo@2x.png`); dotted quads right after a version marker (`version 1.2.3.4`,
`<version>1.2.3.4`, `==1.2.3.4`, `Chrome/1.2.3.4`, `pkg-1.2.3.4`), before an archive suffix (`1.2.3.4.tar.gz`) or
inside a longer dotted number (`1.2.3.4.5`); compressed IPv6 spellings with no
digit (`dead::beef`, code more often than an address); phone-shaped numbers after an `ISBN` marker, and never part
of a longer run of digits joined by dashes or dots (`978-3-16-148410-0`); and the placeholders themselves, so a
second pass is a no-op. Strings without a domain (`user@localhost`, `foo@bar`), decorators (`@property`) and handles
(`@user`) never match the e-mail pattern at all.

Every kind's scan is linear in the text: e-mail and IP patterns run only in windows of bounded size around their
anchors (ANCHORS), phone numbers have a bounded width (`width`), so each try reads a bounded number of characters.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from re import _parser
from typing import Callable

from curate.pii.kind import Kind
from curate.pii.user import user_kind


def _class_of(test, below: int = 0x10000) -> str:
    """The characters below `below` that pass `test`, as ranges for a regex character class."""
    out, first, last = [], None, None
    for c in range(below):
        if test(chr(c)):
            if first is None:
                first = c
            last = c
        elif first is not None:
            out.append(re.escape(chr(first)) + ("-" + re.escape(chr(last)) if last > first else ""))
            first = None
    return "".join(out)


# e-mail: Unicode local parts and domains (RFC 6531, IDNA), so `jörg@müller.de` and `用户@例子.中国` are addresses.
# A word character is Python's `\w` and the combining marks (not `\w`, yet inside words: `o` + U+0308 is `ö`), spelled
# out for the Basic Multilingual Plane (a set `re` tests with one lookup, where `\w` and the marks together take a
# scan of ranges) and every character beyond it (rare scripts, CJK extensions; emoji too, so an emoji written
# against an address may go with it).
_WORD = _class_of(lambda c: c.isalnum() or c == "_" or unicodedata.category(c).startswith("M")) + r"\U00010000-\U0010ffff"
_LOCAL = rf"[{_WORD}%+\-]+(?:\.[{_WORD}%+\-]+)*"
_LABEL = rf"[{_WORD}](?:[{_WORD}-]{{0,61}}[{_WORD}])?"
_TLD = "|".join([r"xn--[A-Za-z0-9-]{1,59}(?![A-Za-z0-9-])",   # an IDN top-level domain spelled in ASCII
                 r"[A-Za-z]{2,63}(?![A-Za-z0-9])",             # ends before a non-ASCII letter: `a@b.com欢迎` is `a@b.com`
                 rf"[{_WORD}-]*[^\W\d_A-Za-z][{_WORD}-]*"])   # a Unicode one (`中国`): it has a non-ASCII letter
EMAIL = re.compile(rf"{_LOCAL}[@\uff20\ufe6b]((?:{_LABEL}[.\uff0e\uff61])+(?:{_TLD}))")
INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")   # print as nothing
EMAIL_RUN = re.compile(rf"[{_WORD}%+\-.\uff0e\uff61{INVISIBLE.pattern[1:-1]}]*")   # what a local part or a domain can be made of
LOCAL_PART = re.compile(rf"{_LOCAL}\Z")   # from the leftmost place where a local part runs up to the `@` (see find.matches)
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
# an optional country or trunk code (`+49 `, `1-`), an area code and two groups; never inside a longer run of
# digits joined by dashes or dots (`1-866-921-5828` is one number, `978-3-16-148410-0` none)
PHONE = re.compile(r"(?<![\w+])(?<!\d[.-])(?:\+\d{1,3}[ .-]?|\d{1,3}[ .-])?(?:\(\d{2,4}\)[ .-]?|\d{2,4}[ .-])"
                   r"\d{3,4}[ .-]?\d{3,4}(?!\w|[.-][\dXx])")   # X: an ISBN-10 check digit


def width(pattern: re.Pattern) -> int:
    """The most characters a match of `pattern` can span (look-arounds aside); unbounded patterns give MAXREPEAT."""
    return _parser.parse(pattern.pattern, pattern.flags).getwidth()[1]


PREFILTER = {   # RE2 (pyarrow.compute.match_substring_regex): true for every document the precise pattern can match
    "email": r"\S[@\x{ff20}\x{fe6b}]\S",   # RE2's \s is ASCII: its \S takes more than Python's, never less
    "ipv4": r"\d\.\d{1,3}\.\d{1,3}\.\d",
    "ipv6": r"[0-9A-Fa-f]::|::[0-9A-Fa-f]|(?:[0-9A-Fa-f]{1,4}:){3}[0-9A-Fa-f]",   # not times (12:30:45)
    "phone": r"\d{3,4}[ .-]?\d{3,4}",
}
PATTERNS = {"email": EMAIL, "ipv4": IPV4, "ipv6": IPV6, "phone": PHONE}
# where a match can be (Python `re` is fast on these, slow on the patterns above), as (anchor, before, after): the
# pattern runs from `before` characters before each anchor hit to `after` after it, never further, so a scan is
# linear in the text. Each `@`: a local part is at most 64 characters, a domain at most 253 (and one more is read
# to see where it ends). Each `.d.d.d`, from up to 3 characters before it (the first number); each `:`, from up to
# 4 before it (the first group); both to the pattern's widest match and the 2 characters its lookahead reads, so
# the window finds exactly what a scan of the whole text would. Finding `@` in Python is cheaper than a second RE2
# pass, so e-mail skips its own.
ANCHORS = {"email": (re.compile("[@\uff20\ufe6b]"), 64, 1 + 253 + 1, False),
           "ipv4": (re.compile(r"\.\d{1,3}\.\d{1,3}\.\d"), 3, width(IPV4) + 2),
           "ipv6": (re.compile(":"), 4, width(IPV6) + 2)}
EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org", "example", "test", "invalid", "localhost")
SCALED_IMAGE = re.compile(r"\d+(?:\.\d+)?x\.(?:png|jpe?g|gif|svg|webp|avif)$", re.I)
VERSION_BEFORE = re.compile(r"(?:(?:version|ver\.|release|build|revision|firmware)_*[\s:=\"'>]*|(?:[=<>~^!]=|[\^~])\s*|[A-Za-z][/-])$", re.I)
VERSION_AFTER = re.compile(r"\.(?:tar|t?gz|zip|jar|whl|exe|dmg|deb|rpm|msi|apk|bz2|xz|7z)\b", re.I)   # pkg-1.2.3.4.tar.gz
ISBN_BEFORE = re.compile(r"\bISBN(?:-?1[03])?:?[\s\d-]{0,20}$", re.I)

# datatrove's PIIFormatter (FineWeb-2): e-mails at domains kept for examples, IPs that answered no ping when listed
DEFAULT_PLACEHOLDERS = {
    "email": ["email@example.com", "firstname.lastname@example.org"],
    "ipv4": ["22.214.171.124", "126.96.36.199", "188.8.131.52", "184.108.40.206", "220.127.116.11", "18.104.22.168"],
    "ipv6": ["2001:db8::1", "2001:db8::2"],    # the documentation prefix (RFC 3849), never edited itself
    "phone": ["+1 555 0100"],
}
KINDS = ("email", "ipv4", "ipv6", "phone")


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
        domain = unicodedata.normalize("NFKC", m.group(1)).casefold().replace("\u3002", ".")   # ｅｘａｍｐｌｅ．ｃｏｍ too
        return not any(domain == d or domain.endswith("." + d) for d in kept) and not SCALED_IMAGE.match(domain)
    return accept


def phone(low: int, high: int) -> Callable[[str, re.Match], bool]:
    def accept(text: str, m: re.Match) -> bool:
        return low <= sum(c.isdigit() for c in m.group(0)) <= high and not ISBN_BEFORE.search(text, max(0, m.start() - 32), m.start())
    return accept


def build_kinds(kinds: list[str], patterns: dict[str, str], placeholders: dict, public_only: bool,
                keep_domains: list[str], timeout: float = 1.0) -> list[Kind]:
    """The kinds a pii step looks for, in the order their spans win an overlap (built-ins first, then the user's,
    each given `timeout` seconds per document)."""

    accept = {"email": email(tuple(keep_domains)), "ipv4": ipv4(public_only), "ipv6": ipv6(public_only), "phone": phone(9, 15)}
    out = [Kind(k, PATTERNS[k], PREFILTER[k], _placeholders(placeholders, k), accept[k], *ANCHORS.get(k, ()),
                **({"invisible": INVISIBLE, "run": EMAIL_RUN, "lead": LOCAL_PART} if k == "email" else {})) for k in KINDS if k in kinds]
    return out + [user_kind(name, regex, _placeholders(placeholders, name), timeout) for name, regex in sorted(patterns.items())]


def _placeholders(placeholders: dict, kind: str) -> tuple[str, ...]:
    value = placeholders.get(kind, DEFAULT_PLACEHOLDERS.get(kind, f"<{kind}>"))
    return (value,) if isinstance(value, str) else tuple(value)
