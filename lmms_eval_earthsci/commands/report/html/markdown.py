"""The report's own Markdown (headings, pipe tables, paragraphs, images, `code`, **bold**) as HTML.

Only the subset ``report.md`` is written in; every piece of text is escaped first, so a task alias or a
model name from a results file is text, never markup. Images may only name a file in the report folder.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import cast

_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]+)\)$")
_SAFE_FILE = re.compile(r"^[\w.-]+\.png$")


def inline(text: str) -> str:
    """Escape ``text``, then render `code` and **bold** (both already escaped inside)."""
    out = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if i % 2:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            esc = html.escape(part)
            out.append(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", esc))
    return "".join(out)


def anchor(title: str) -> str:
    return re.sub(r"[^\w-]+", "-", title.strip().lower()).strip("-") or "section"


class Anchors:
    """Unique heading ids: a ``##`` heading's is its title's (``#headline``); a deeper one's is prefixed
    with its section's (each benchmark's "Counts": ``#msearth-counts``; EMMA under Position bias:
    ``#position-bias-emma``); any id still taken (``reserved``: the page's own) gets ``-2``, ``-3``..."""

    def __init__(self, reserved: tuple[str, ...] = ()):
        self.used = set(reserved)
        self.section = ""

    def __call__(self, level: int, title: str) -> str:
        base = anchor(title)
        if level <= 2:
            self.section = base
        elif self.section:
            base = f"{self.section}-{base}"
        out, n = base, 1
        while out in self.used:
            n += 1
            out = f"{base}-{n}"
        self.used.add(out)
        return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def to_html(markdown: str, cell: Callable[[str, list[str], int, str, str], str] | None = None, reserved: tuple[str, ...] = ()) -> str:
    """HTML for ``markdown``. ``cell(section, row, index, html, heading)`` may rewrite a body cell's HTML
    (the report adds links from the paired comparisons to the sample browser, a run's interval to the
    paper tables); ``section`` is the ``##`` heading above the table, ``heading`` the nearest heading of any
    level. Heading ids are unique (:class:`Anchors`), none of them one of ``reserved`` (the page's own ids)."""
    lines = markdown.splitlines()
    ids = Anchors(reserved)
    out: list[str] = []
    section = heading_text = ""
    i = 0
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + "<br>".join(inline(p.rstrip()) for p in para) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        heading = re.match(r"^(#{1,4}) (.*)$", line)
        if heading:
            flush()
            level, title = len(heading.group(1)), heading.group(2)
            if level <= 2:
                section = title
            heading_text = title
            out.append(f'<h{level} id="{ids(level, title)}">{inline(title)}</h{level}>')
        elif line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1].strip()):
            flush()
            header = _cells(line)
            aligns = ["right" if c.endswith(":") else "left" for c in _cells(lines[i + 1])]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            head = "".join(f"<th>{inline(h)}</th>" for h in header)
            body = []
            for row in rows:
                tds = []
                for k, c in enumerate(row):
                    content = inline(c)
                    if cell is not None:
                        content = cell(section, row, k, content, heading_text)
                    align = aligns[k] if k < len(aligns) else "left"
                    tds.append(f'<td class="{align}">{content}</td>')
                body.append("<tr>" + "".join(tds) + "</tr>")
            out.append(f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')
            continue
        elif _IMAGE.match(line.strip()):
            flush()
            alt, src = cast("re.Match[str]", _IMAGE.match(line.strip())).groups()  # matched just above
            if _SAFE_FILE.match(src):
                out.append(f'<figure><img src="{html.escape(src)}" alt="{html.escape(alt)}" loading="lazy"></figure>')
        elif line.startswith("- "):
            flush()
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{inline(lines[i][2:].rstrip())}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return "\n".join(out)
