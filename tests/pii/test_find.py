"""PII spans on a corpus of addresses in many forms and look-alikes that are not addresses: every true address
replaced, nothing else touched (the whole edited text is compared), every span re-applicable."""

import hashlib
import random
import re

import pyarrow as pa
import pytest

from curate.pii import DEFAULT_PLACEHOLDERS, build_kinds, find_spans
from curate.rundir.edits import apply_edits, apply_spans, spans_by_id

E, I4, I6 = "<E>", "<I4>", "<I6>"   # one placeholder per kind, so the expected text is written out
KINDS = build_kinds(["email", "ipv4", "ipv6"], {}, {"email": E, "ipv4": I4, "ipv6": I6}, True, [])

# (original, expected): every address in [[...]] markers is written as its placeholder in the expected text
CORPUS = [
    ("Write to John.Doe@Gmail.COM, or (jane_d+news@mail.univ.edu.au).", f"Write to {E}, or ({E})."),
    ("SHOUTING: SUPPORT@ACME-CORP.IO!", f"SHOUTING: {E}!"),
    ("<a href='mailto:x.y@z-corp.de'>mail me</a>; <bob@company.io>", f"<a href='mailto:{E}'>mail me</a>; <{E}>"),
    ("Sentence ends with an address: ana@uni.edu.pl. Next one.", f"Sentence ends with an address: {E}. Next one."),
    ("email:maria.gomez@correo.es\nphone later", f"email:{E}\nphone later"),
    ("Idn: user@xn--80ak6aa92e.xn--p1ai and ünïcode près@example.com stay", f"Idn: {E} and ünïcode près@example.com stay"),
    ("examples stay: ALICE@EXAMPLE.COM, a@sub.example.org, t@host.test, u@x.invalid",
     "examples stay: ALICE@EXAMPLE.COM, a@sub.example.org, t@host.test, u@x.invalid"),
    ("not addresses: user@localhost, foo@bar, @property, @user_handle, logo@2x.png, icon@1.5x.webp, a @ b.com",
     "not addresses: user@localhost, foo@bar, @property, @user_handle, logo@2x.png, icon@1.5x.webp, a @ b.com"),
    ("class A:\n    @property\n    def x(self):\n        return self._x  # see git docs\n",
     "class A:\n    @property\n    def x(self):\n        return self._x  # see git docs\n"),
    ("resolver 8.8.8.8:53, (1.1.1.1), [195.234.74.142] and 8.8.4.4.", f"resolver {I4}:53, ({I4}), [{I4}] and {I4}."),
    ("private and reserved stay: 10.0.0.1 192.168.1.20 172.16.5.4 127.0.0.1 169.254.1.1 0.0.0.0 255.255.255.255",
     "private and reserved stay: 10.0.0.1 192.168.1.20 172.16.5.4 127.0.0.1 169.254.1.1 0.0.0.0 255.255.255.255"),
    ("documentation ranges stay: 192.0.2.7 198.51.100.1 203.0.113.9", "documentation ranges stay: 192.0.2.7 198.51.100.1 203.0.113.9"),
    ("multicast groups stay: 230.0.0.4 239.255.255.250 ff02::1 ff0e::1", "multicast groups stay: 230.0.0.4 239.255.255.250 ff02::1 ff0e::1"),
    ("versions stay: v1.2.3.4, version 1.2.3.4, Version: 4.3.2.1, requests==2.3.4.5, Chrome/91.0.44.12, 1.2.3.4.5, "
     "__version__ = '5.6.7.8'", "versions stay: v1.2.3.4, version 1.2.3.4, Version: 4.3.2.1, requests==2.3.4.5, "
     "Chrome/91.0.44.12, 1.2.3.4.5, __version__ = '5.6.7.8'"),
    ("dates and numbers stay: 24.11.2026, 12.05.2019, 3.14159, 256.1.1.1, 01.2.3.4, 1.2.3", "dates and numbers stay: "
     "24.11.2026, 12.05.2019, 3.14159, 256.1.1.1, 01.2.3.4, 1.2.3"),
    ("but a bare quad in prose is an address: host 1.2.3.4 answered", f"but a bare quad in prose is an address: host {I4} answered"),
    ("<version>5.6.7.8</version> pkg-1.2.3.4.tar.gz app-2.3.4.5 setup-9.1.1.1.exe ~=3.4.5.6",
     "<version>5.6.7.8</version> pkg-1.2.3.4.tar.gz app-2.3.4.5 setup-9.1.1.1.exe ~=3.4.5.6"),
    ("<td>8.8.8.8</td> <b>1.1.1.1</b> >9.9.9.9 and 8.8.4.4.", f"<td>{I4}</td> <b>{I4}</b> >{I4} and {I4}."),
    ("v6: 2a00:1450:4007:80e::200e, [2606:4700:4700::1111]:443 and 2001:4860:4860:0:0:0:0:8888.",
     f"v6: {I6}, [{I6}]:443 and {I6}."),
    ("V6 UPPER 2A03:2880:F12F:83:FACE:B00C:0:25DE and mapped ::ffff:8.8.4.4", f"V6 UPPER {I6} and mapped {I6}"),
    ("v6 that stay: ::1 fe80::1 2001:db8::ff00:42:8329 fd00::7 :: std::vector dead::beef 12:30:45 00:1a:2b:3c:4d:5e",
     "v6 that stay: ::1 fe80::1 2001:db8::ff00:42:8329 fd00::7 :: std::vector dead::beef 12:30:45 00:1a:2b:3c:4d:5e"),
    ("placeholders stay: email@example.com 22.214.171.124", f"placeholders stay: email@example.com {I4}"),
    ("nothing here at all", "nothing here at all"),
    ("", ""),
]


def test_every_address_replaced_and_nothing_else():
    texts = pa.array([t for t, _ in CORPUS])
    spans = find_spans(texts, KINDS)
    by_row: dict[int, list] = {}
    for row, start, end, placeholder in zip(*(spans.column(c).to_pylist() for c in ("row", "start", "end", "placeholder"))):
        by_row.setdefault(row, []).append((start, end, placeholder))
    for row, (text, expected) in enumerate(CORPUS):
        assert apply_spans(text, by_row.get(row, [])) == expected, text


def test_the_default_placeholders_keep_our_own_placeholder_ips_out():
    """With datatrove's placeholders a placeholder IP is global, yet a second pass leaves it: redaction is idempotent."""
    kinds = build_kinds(["email", "ipv4", "ipv6"], {}, {}, True, [])
    texts = pa.array([t for t, _ in CORPUS])
    once = apply_edits(pa.table({"id": [str(i) for i in range(len(CORPUS))], "text": texts}),
                       spans_by_id(_with_ids(find_spans(texts, kinds))))
    assert find_spans(once.column("text"), kinds).num_rows == 0


def _with_ids(spans: pa.Table) -> pa.Table:
    return spans.append_column("id", pa.array([str(r) for r in spans.column("row").to_pylist()]))


def test_spans_record_the_original_hash_and_a_deterministic_placeholder():
    text = "a@b.co and c@d.co, then a@b.co again; 9.9.9.9 and 2a00:1450::1"
    kinds = build_kinds(["email", "ipv4", "ipv6"], {}, {}, True, [])
    rows = find_spans(pa.array([text]), kinds).to_pylist()
    assert [r["kind"] for r in rows] == ["email", "email", "email", "ipv4", "ipv6"]
    for r in rows:
        original = text[r["start"]:r["end"]]
        assert r["original"] == original and r["original_sha256"] == hashlib.sha256(original.encode()).hexdigest()
        choices = DEFAULT_PLACEHOLDERS[r["kind"]]
        assert r["placeholder"] == choices[int(r["original_sha256"][:16], 16) % len(choices)]
    assert rows[0]["placeholder"] == rows[2]["placeholder"], "the same address gets the same placeholder"


def test_code_point_offsets_survive_non_ascii_text():
    text = "Ĳ 日本語 😀 mail: kontakt@beispiel-straße.de.com 😀 ip 8.8.8.8 ünd kontakt@firma.de."
    rows = find_spans(pa.array([text]), KINDS).to_pylist()
    assert [text[r["start"]:r["end"]] for r in rows] == ["kontakt@beispiel-straße.de.com", "8.8.8.8", "kontakt@firma.de"], \
        "an IDN domain in Unicode is an address too"
    assert apply_spans(text, [(r["start"], r["end"], r["placeholder"]) for r in rows]) == f"Ĳ 日本語 😀 mail: {E} 😀 ip {I4} ünd {E}."


def test_optional_phone_numbers_and_a_custom_pattern():
    kinds = build_kinds(["phone"], {"ticket": r"TICKET-\d{6}"}, {"phone": "<P>"}, True, [])
    text = "Call +1 415 555 2671 or (030) 1234 5678 about TICKET-123456; not 2024-11-24, not 1234."
    rows = find_spans(pa.array([text]), kinds).to_pylist()
    spans = [(r["start"], r["end"], r["placeholder"]) for r in rows]
    assert apply_spans(text, spans) == "Call <P> or <P> about <ticket>; not 2024-11-24, not 1234."


def test_a_custom_pattern_is_prefiltered_by_a_literal_it_needs_or_runs_everywhere():
    kinds = build_kinds([], {"secret": r"(?<=key=)\w+"}, {}, True, [])
    assert kinds[0].prefilter is None, "the look-behind's text is not in the match"
    assert build_kinds([], {"t": r"\w+@corp"}, {}, True, [])[0].prefilter == r"\x{40}\x{63}\x{6f}\x{72}\x{70}"
    unicode = find_spans(pa.array(["mail é@corp now"]), build_kinds([], {"t": r"\w+@corp"}, {}, True, [])).to_pylist()
    assert [(r["start"], r["end"]) for r in unicode] == [(5, 11)], "Python's \\w, not RE2's"
    rows = find_spans(pa.array(["key=abc123 and nokey"]), kinds).to_pylist()
    assert [(r["start"], r["end"], r["placeholder"]) for r in rows] == [(4, 10, "<secret>")]


def test_apply_spans_refuses_overlaps():
    assert apply_spans("abcdef", [(4, 6, "Y"), (0, 2, "X")]) == "XcdY"
    with pytest.raises(ValueError, match="overlaps"):
        apply_spans("abcdef", [(0, 3, "X"), (2, 4, "Y")])


def test_apply_edits_touches_only_rows_with_spans():
    table = pa.table({"id": ["a", "b", "c"], "text": ["keep", "x@y.io here", "keep too"], "n": [1, 2, 3]})
    out = apply_edits(table, {"b": [(0, 6, E)], "zz": [(0, 1, "?")]})
    assert out.column("text").to_pylist() == ["keep", f"{E} here", "keep too"]
    assert out.column("n").to_pylist() == [1, 2, 3] and out.schema == table.schema
    assert apply_edits(table, {}) is table


def test_prefilters_never_miss_what_the_precise_patterns_find():
    """Every document where a precise pattern (exceptions aside) matches is a prefilter candidate."""
    from curate.pii.find import candidates

    texts = pa.array([t for t, _ in CORPUS])
    rows, masks = candidates(texts, KINDS)
    for kind, mask in zip(KINDS, masks):
        flagged = {int(r) for r, m in zip(rows, mask) if m}
        for row, (text, _) in enumerate(CORPUS):
            if re.search(kind.pattern, text):
                assert row in flagged, (kind.name, text)


def test_anchored_matching_finds_what_the_patterns_find_everywhere():
    """The patterns run only in windows around `@`, dotted quads and `:`: the same matches as over the whole text."""
    from conftest import SHARED_DATA
    from curate.pii.find import matches

    texts = [t for t, _ in CORPUS] + ["x" * 70 + "@a.com", "a@b.co@c.io d@e.fr", "1.2.3.4.5.6.7.8 9.9.9.9 12345.6.7.8.9",
                                      "1:2:3:4:5:6:7:8:9:a:b 2a00:1:2:3:4:5:6:7:8 x:2a00::1,(2a00::2)" + ":".join("ab" * 40)]
    rnd = random.Random(0)   # and strings made of the characters the anchors and windows turn on
    texts += ["".join(rnd.choice("0123456789..::abcf@ x-") for _ in range(rnd.randint(5, 60))) for _ in range(1500)]
    dolma = sorted((SHARED_DATA / "dolma" / "formats").glob("*.jsonl.gz"))
    if dolma:   # real Common Crawl pages, where present (not on a user's machine)
        import gzip
        import json

        with gzip.open(dolma[0], "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    for kind in KINDS:
        assert kind.anchor is not None
        for text in texts:
            got = [m.span() for m in matches(kind, text)]
            want = [_local_cut(kind, text, m) for m in kind.pattern.finditer(text)]
            assert got == want, (kind.name, text[:200])


def _local_cut(kind, text: str, m) -> tuple[int, int]:
    """A match as the windows find it: an e-mail local part over 64 characters is cut to its last 64 (its first
    character that can start one: not a dot)."""
    if kind.name != "email" or (at := m.start(1) - 1) - m.start() <= 64:   # the at sign is just before the domain
        return m.span()
    return kind.lead.search(text, at - 64, at).start(), m.end()
