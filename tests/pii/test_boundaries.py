"""Where an address or a number begins and ends (issue 28): e-mail in any script, across invisible characters and
before a joined sentence; phone numbers never cut out of a longer number, ISBNs left alone; and every kind's scan
reads a bounded stretch of text per place it looks at, so it is linear in the text."""

import dataclasses
import random

import pyarrow as pa
import pytest

from curate.pii import build_kinds, find_spans
from curate.rundir.edits import apply_spans
from curate.pii.find import matches
from curate.pii.patterns import PHONE, width

E, P = "<E>", "<P>"
KINDS = build_kinds(["email", "ipv4", "ipv6", "phone"], {}, {"email": E, "phone": P}, True, [])


def _redacted(text: str, kinds=KINDS) -> str:
    rows = find_spans(pa.array([text]), kinds).to_pylist()
    return apply_spans(text, [(r["start"], r["end"], r["placeholder"]) for r in rows])


@pytest.mark.parametrize("text, expected", [
    ("write john@gmail.com.2020 was", f"write {E}.2020 was"),            # sentences joined by crawling
    ("mail a.b@gmail.com.k1 now", f"mail {E}.k1 now"),
    ("to jörg@müller.de today", f"to {E} today"),                        # IDN, composed
    ("to jo\u0308rg@mu\u0308ller.de today", f"to {E} today"),            # and decomposed (combining marks)
    ("联系 用户@例子.中国", f"联系 {E}"),
    ("邮箱:abc@163.com欢迎来信", f"邮箱:{E}欢迎来信"),                     # an ASCII domain ends before Chinese
    ("डाक@उदाहरण.भारत", E),
    ("jo\u200bhn@gm\u200bail.com!", f"{E}!"),                             # zero-width space inside
    ("john\u2060@\u00adgmail.com", E),                                   # word joiner, soft hyphen
    ("info＠firma．de", E),                                                # fullwidth at sign and dot
    ("a..b@c.com", f"a..{E}"),
    ("x" * 70 + "@a.com", "x" * 6 + E),                                  # a local part is at most 64 characters
    ("ana@uni.edu.pl. Next", f"{E}. Next"),
    ("user@xn--80ak6aa92e.xn--p1ai", E),
    # still not addresses
    ("pkg@1.2.3 @property a @ b.com user@localhost logo@2x.png ＠user", "pkg@1.2.3 @property a @ b.com user@localhost logo@2x.png ＠user"),
    ("info＠ｅｘａｍｐｌｅ．ｃｏｍ and x@sub.example.org", "info＠ｅｘａｍｐｌｅ．ｃｏｍ and x@sub.example.org"),
])
def test_email_boundaries(text, expected):
    assert _redacted(text) == expected


def test_a_domain_over_253_characters_is_redacted_where_the_window_ends():
    text = "x@" + "a" * 60 + "." + ("b" * 60 + ".") * 5 + "com"
    assert [m.span() for m in matches(KINDS[0], text)] == [(0, 1 + 255)]


def test_invisible_characters_change_nothing_but_the_span():
    """The same addresses are found with zero-width characters strewn through the text: redacting, then dropping
    them, gives what redacting the text without them gives."""
    rnd = random.Random(3)
    base = ["Write to John.Doe@Gmail.COM, or (jane_d+news@mail.univ.edu.au).", "jörg@müller.de und 用户@例子.中国 und a@b.co",
            "not: user@localhost, foo@bar, logo@2x.png, a @ b.com", "ana@uni.edu.pl. Next one a@b.com.2020"]
    kinds = [k for k in KINDS if k.name == "email"]
    for text in base:
        strewn = "".join(c + (rnd.choice("\u200b\u200c\u200d\u2060\ufeff\u00ad") if rnd.random() < 0.3 else "") for c in text)
        assert "".join(c for c in _redacted(strewn, kinds) if c not in "\u200b\u200c\u200d\u2060\ufeff\u00ad") == _redacted(text, kinds)


@pytest.mark.parametrize("text, expected", [
    ("call 1-866-921-5828 now", f"call {P} now"),                        # the whole number, not `1-` + a phone
    ("Tel +49 30 1234 5678.", f"Tel {P}."),
    ("Call +1 415 555 2671 or (030) 1234 5678", f"Call {P} or {P}"),
    ("ISBN 978-3-16-148410-0", "ISBN 978-3-16-148410-0"),
    ("978-3-16-148410-0", "978-3-16-148410-0"),
    ("ISBN 0-306-40615-2 and ISBN-10: 0 306 40615 2", "ISBN 0-306-40615-2 and ISBN-10: 0 306 40615 2"),
    ("ISBN 978 3 16 148410 0", "ISBN 978 3 16 148410 0"),
    ("ISBN 960-425-059-0, 85-359-0277-5, 0-8044-2957-X", "ISBN 960-425-059-0, 85-359-0277-5, 0-8044-2957-X"),
    ("serial 12-3456-7890-12-34", "serial 12-3456-7890-12-34"),
])
def test_phone_numbers_are_whole_numbers_and_not_isbns(text, expected):
    assert _redacted(text) == expected


def test_a_phone_match_never_starts_or_ends_inside_a_run_of_digits():
    rnd = random.Random(5)
    kind = [k for k in KINDS if k.name == "phone"][0]
    for _ in range(3000):
        text = "".join(rnd.choice("0123456789-. ") for _ in range(rnd.randint(5, 40)))
        for m in matches(kind, text):
            before, after = text[max(0, m.start() - 2):m.start()], text[m.end():m.end() + 2]
            assert not before[-1:].isdigit() and not (len(before) == 2 and before[0].isdigit() and before[1] in ".-"), text
            assert not after[:1].isdigit() and not (len(after) == 2 and after[0] in ".-" and after[1].isdigit()), text


class _Recorder:
    """A compiled pattern that records the stretch of text each call may read."""

    def __init__(self, pattern, reads: list):
        self.pattern, self.reads = pattern, reads

    def search(self, text, pos=0, endpos=None):
        self.reads.append((endpos if endpos is not None else len(text)) - pos)
        return self.pattern.search(text, pos, len(text) if endpos is None else endpos)

    def match(self, text, pos=0, endpos=None):
        self.reads.append((endpos if endpos is not None else len(text)) - pos)
        return self.pattern.match(text, pos, len(text) if endpos is None else endpos)

    def finditer(self, text):
        raise AssertionError("an anchored kind never scans the whole text")


ADVERSARIAL = ["x@y;", "a.b@", "a@b.", "x@a.", "a\u200b@", "1.2.3.", "1.", "a:", "1:2::", "8.8.8.8 ", "a@b.co "]


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_each_anchored_scan_reads_a_bounded_window(unit):
    """The e-mail, IPv4 and IPv6 patterns run only in windows of bounded size (one `@` of 100 KB without
    whitespace used to be searched to the end of the text: quadratic), whatever the text."""
    text = (unit * (100_000 // len(unit) + 1))[:100_000]
    for kind in KINDS[:3]:
        reads: list = []
        recorded = dataclasses.replace(kind, pattern=_Recorder(kind.pattern, reads),
                                       lead=kind.lead and _Recorder(kind.lead, reads))
        list(matches(recorded, text))
        bound = 2 * (kind.before + kind.after)
        assert max(reads, default=0) <= bound, (kind.name, max(reads))
        assert sum(reads) <= 2 * bound * sum(1 for _ in kind.anchor.finditer(text)), kind.name


def test_the_unanchored_patterns_have_a_bounded_width():
    """Phone numbers scan the whole text, each try reading at most the pattern's width (and 2 characters of lookahead)."""
    assert width(PHONE) <= 32
