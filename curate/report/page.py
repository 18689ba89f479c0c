"""The HTML around the charts: one self-contained page (inline CSS, inline SVG, no script, no network)."""

from __future__ import annotations

from html import escape

CSS = """
:root { --ink:#1f2933; --muted:#616e7c; --line:#e4e7eb; --bg:#f5f7fa; --card:#ffffff; --accent:#4e79a7; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
       font:14px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif; }
header { background:#102a43; color:#f0f4f8; padding:22px 32px 18px; }
header h1 { margin:0 0 4px; font-size:22px; font-weight:650; }
header .meta { color:#bcccdc; font-size:12.5px; }
header .meta code { color:#f0f4f8; }
nav { position:sticky; top:0; z-index:5; background:#243b53; padding:6px 32px; display:flex; flex-wrap:wrap; gap:4px 18px; }
nav a { color:#d9e2ec; text-decoration:none; font-size:13px; }
nav a:hover { color:#ffffff; text-decoration:underline; }
main { max-width:1340px; margin:0 auto; padding:18px 24px 40px; }
section { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:18px 22px 10px; margin:0 0 18px; }
section > h2 { margin:0 0 4px; font-size:18px; }
section > p.lead { margin:0 0 12px; color:var(--muted); max-width:980px; }
h3 { font-size:14px; margin:0 0 6px; }
.grid { display:grid; grid-template-columns:repeat(auto-fill, minmax(min(560px, 100%), 1fr)); gap:14px 22px; }
figure { margin:0 0 12px; min-width:0; }
figure svg { display:block; max-width:100%; height:auto; }
figcaption { color:var(--muted); font-size:12.5px; margin-top:4px; }
.cards { display:grid; grid-template-columns:repeat(auto-fill, minmax(170px, 1fr)); gap:10px; margin:0 0 14px; }
.card { border:1px solid var(--line); border-radius:8px; padding:10px 12px; background:#fbfcfd; }
.card .v { font-size:21px; font-weight:650; }
.card .k { color:var(--muted); font-size:12px; }
table { border-collapse:collapse; margin:4px 0 14px; font-size:12.5px; }
th, td { padding:4px 10px; border-bottom:1px solid var(--line); text-align:left; vertical-align:top; }
th { color:var(--muted); font-weight:600; background:#fbfcfd; }
td.n, th.n { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
td .sub { color:var(--muted); font-size:11.5px; }
td.nowrap { white-space:nowrap; }
.wide { overflow-x:auto; }
.note { background:#fffbea; border:1px solid #f7e3a1; border-radius:8px; padding:8px 12px; margin:0 0 12px; color:#5c4813; font-size:13px; }
.swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:5px; vertical-align:-1px; }
code { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12px; overflow-wrap:anywhere; }
.muted { color:var(--muted); }
footer { color:var(--muted); font-size:12px; text-align:center; padding:0 0 30px; }
.docs { display:grid; grid-template-columns:repeat(auto-fill, minmax(min(300px, 100%), 1fr)); gap:10px; margin:0 0 14px; }
.side { display:grid; grid-template-columns:repeat(auto-fit, minmax(min(260px, 100%), 1fr)); gap:10px; margin:0 0 16px; }
.doc { border:1px solid var(--line); border-radius:8px; padding:8px 10px; background:#fbfcfd; min-width:0; font-size:12.5px; }
.doc-head { margin:0 0 4px; overflow-wrap:anywhere; }
.doc .id { color:var(--muted); font-size:11.5px; }
.doc code.reason { color:#8a1c1c; }
.doc .detail { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:11.5px; color:#5c4813; background:#fffbea;
               border-radius:4px; padding:2px 6px; margin:0 0 4px; overflow-wrap:anywhere; }
.doc .snippet { color:#334e68; overflow-wrap:anywhere; }
.doc .why { color:var(--muted); font-size:11px; margin-top:4px; overflow-wrap:anywhere; user-select:all; }
.tag { font-size:11px; border-radius:4px; padding:0 5px; white-space:nowrap; }
.tag.kept { background:#e3f1e8; color:#1f5c36; } .tag.gone { background:#fbe6e6; color:#8a1c1c; }
td code, .detail, .snippet { word-break:normal; }
@media (max-width: 640px) {
  header { padding:14px 14px 12px; } nav { position:static; padding:6px 14px; } main { padding:10px 8px 30px; }
  section { padding:12px 12px 6px; border-radius:8px; }
  header h1 { font-size:18px; } header .meta { overflow-wrap:anywhere; }
  .cards { grid-template-columns:repeat(auto-fill, minmax(140px, 1fr)); }
}
"""


def figure(title: str, svg: str, caption: str) -> str:
    return f'<figure><h3>{escape(title)}</h3>{svg}<figcaption>{caption}</figcaption></figure>'


def note(text: str) -> str:
    return f'<div class="note">{escape(text)}</div>'


def source_cell(source: str, colors: dict) -> str:
    """A source's name behind its colour swatch, for a table cell (raw HTML)."""
    return f'<span class="swatch" style="background:{colors.get(source, "#999")}"></span>{escape(source)}'


def cards(items: list[tuple[str, str]]) -> str:
    return '<div class="cards">' + "".join(f'<div class="card"><div class="v">{escape(v)}</div><div class="k">{escape(k)}</div></div>'
                                          for k, v in items) + "</div>"


def table(headers: list[str], rows: list[list], numeric: set[int] = frozenset(), raw: bool = False) -> str:
    """A table; cells are escaped unless `raw` (cells the caller built as HTML)."""
    head = "".join(f'<th class="n">{escape(h)}</th>' if i in numeric else f"<th>{escape(h)}</th>" for i, h in enumerate(headers))
    body = []
    for row in rows:
        cells = []
        for i, c in enumerate(row):
            text = str(c) if raw else escape(str(c))
            cells.append(f'<td class="n">{text}</td>' if i in numeric else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def section(anchor: str, title: str, lead: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2><p class="lead">{lead}</p>{body}</section>'


def render(title: str, meta: str, sections: list[tuple[str, str, str]]) -> str:
    """`sections`: (anchor, nav label, html)."""
    nav = "".join(f'<a href="#{a}">{escape(label)}</a>' for a, label, _ in sections)
    body = "".join(html for _, _, html in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
            f"<header><h1>{escape(title)}</h1><div class=\"meta\">{meta}</div></header><nav>{nav}</nav>"
            f"<main>{body}</main><footer>Made by <code>curate report</code> from the run's own files; "
            "every number is the run's, estimates say so.</footer></body></html>\n")
