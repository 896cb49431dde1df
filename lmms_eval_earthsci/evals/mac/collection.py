"""The input of a MAC snapshot build (spec §3.6 steps 1-2 and 6): the user's covers and stories, read
from a folder laid out as the MAC repo or from a manifest CSV, cleaned, and the snapshot window.

Nothing is scraped. Folder input: ``<root>/<Publisher>/Cover/<Journal>/<id>.<png|jpg|jpeg|webp>`` and
``<root>/<Publisher>/Story/<Journal>/<id>.txt``, paired by file stem; it carries no dates, so a window
needs the manifest. Manifest CSV: ``publisher, journal, id, cover_path, story_path, pub_date`` (paths
relative to the manifest's folder or absolute; ``pub_date`` ``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY``).
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".webp")
MANIFEST_COLUMNS = ("publisher", "journal", "id", "cover_path", "story_path", "pub_date")
# select_latest_10k.check_white_patches: blank when > 90 % of the pixels have a mean RGB above 240
BLANK_LEVEL, BLANK_SHARE = 240, 0.90


class BuildInputError(ValueError):
    """Input that cannot be built from: one message naming the file, row and field."""


@dataclass
class Issue:
    publisher: str
    journal: str
    id: str
    cover: str  # absolute path of the cover image
    story: str  # the cover story text
    story_path: str | None = None
    pub_date: str | None = None
    cover_sha: str = ""
    story_sha: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.journal, self.id)

    @property
    def cover_ext(self) -> str:
        return os.path.splitext(self.cover)[1].lower()


@dataclass
class Cleaning:
    """What reading and cleaning dropped, by reason, with the files or rows concerned."""

    read: int = 0
    dropped: dict[str, list[str]] = field(default_factory=dict)

    def drop(self, reason: str, what: str) -> None:
        self.dropped.setdefault(reason, []).append(what)

    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.dropped.items()}

    def lines(self, listed: int = 5) -> list[str]:
        out = [f"read {self.read} cover-story pairs"]
        for reason, items in self.dropped.items():
            shown = "; ".join(items[:listed]) + (f"; ... ({len(items) - listed} more)" if len(items) > listed else "")
            out.append(f"dropped {len(items)}: {reason} ({shown})")
        return out


# --------------------------------------------------------------------------- dates and windows


_DATE_RE = re.compile(r"^(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?$")


def parse_month(text: str, what: str) -> tuple[int, int]:
    """``YYYY-MM`` -> (year, month); anything else is a :class:`BuildInputError` naming ``what``."""
    m = re.fullmatch(r"(\d{4})-(\d{1,2})", (text or "").strip())
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise BuildInputError(f"{what}: expected YYYY-MM, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def date_span(text: str | None) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The months a ``pub_date`` covers: a day or a month is one month, a bare year its twelve; None
    when there is no date. Raises ``ValueError`` for a malformed one."""
    if text is None or not str(text).strip():
        return None
    m = _DATE_RE.match(str(text).strip())
    if not m or (m.group(2) and not 1 <= int(m.group(2)) <= 12):
        raise ValueError(f"expected YYYY-MM-DD, YYYY-MM or YYYY, got {text!r}")
    year = int(m.group(1))
    if m.group(2):
        return (year, int(m.group(2))), (year, int(m.group(2)))
    return (year, 1), (year, 12)


def in_window(issue: Issue, start: tuple[int, int] | None, end: tuple[int, int] | None) -> bool:
    """Inside ``[start, end]`` (months, both ends included). An issue dated by year only is inside when
    the window holds its whole year."""
    span = date_span(issue.pub_date)
    if span is None:
        raise BuildInputError(f"{issue.journal}/{issue.id}: no pub_date, and a --from/--to window needs one (give a manifest CSV with pub_date)")
    first, last = span
    return (start is None or first >= start) and (end is None or last <= end)


# --------------------------------------------------------------------------- reading


def _read_story(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def read_folder(root: str, report: Cleaning) -> list[Issue]:
    """Pairs of ``<Publisher>/Cover/<Journal>/<id>.<ext>`` and ``<Publisher>/Story/<Journal>/<id>.txt``."""
    issues = []
    publishers = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d, "Cover")) or os.path.isdir(os.path.join(root, d, "Story")))
    if not publishers:
        raise BuildInputError(f"{root}: no <Publisher>/Cover/<Journal>/<id>.png (and Story/<Journal>/<id>.txt) folders found; give that layout or a manifest CSV ({', '.join(MANIFEST_COLUMNS)})")
    for publisher in publishers:
        covers_dir, stories_dir = os.path.join(root, publisher, "Cover"), os.path.join(root, publisher, "Story")
        journals = sorted(set(_subdirs(covers_dir)) | set(_subdirs(stories_dir)))
        for journal in journals:
            covers = {os.path.splitext(n)[0]: os.path.join(covers_dir, journal, n) for n in _files(os.path.join(covers_dir, journal)) if n.lower().endswith(IMAGE_EXTS)}
            stories = {os.path.splitext(n)[0]: os.path.join(stories_dir, journal, n) for n in _files(os.path.join(stories_dir, journal)) if n.lower().endswith(".txt")}
            for stem in sorted(set(covers) | set(stories)):
                report.read += 1
                if stem not in stories:
                    report.drop("no story file", covers[stem])
                elif stem not in covers:
                    report.drop("no cover image", stories[stem])
                else:
                    issues.append(Issue(publisher, journal, stem, os.path.abspath(covers[stem]), _read_story(stories[stem]), os.path.abspath(stories[stem])))
    return issues


def _subdirs(folder: str) -> list[str]:
    return [d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)) and not d.startswith(".")] if os.path.isdir(folder) else []


def _files(folder: str) -> list[str]:
    return sorted(n for n in os.listdir(folder) if not n.startswith(".")) if os.path.isdir(folder) else []


def read_manifest(path: str, report: Cleaning) -> list[Issue]:
    base = os.path.dirname(os.path.abspath(path))
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in MANIFEST_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise BuildInputError(f"{path}: missing column(s) {', '.join(missing)} (expected {', '.join(MANIFEST_COLUMNS)}; found {', '.join(reader.fieldnames or [])})")
        issues = []
        for n, row in enumerate(reader, start=2):
            where = f"{path}, line {n}"
            for col in ("publisher", "journal", "id", "cover_path"):
                if not (row.get(col) or "").strip():
                    raise BuildInputError(f"{where}: empty {col}")
            try:
                date_span(row.get("pub_date"))
            except ValueError as exc:
                raise BuildInputError(f"{where} ({row['journal']}/{row['id']}): pub_date {exc}") from None
            report.read += 1
            cover = os.path.join(base, row["cover_path"].strip())
            story_path = os.path.join(base, row["story_path"].strip()) if (row.get("story_path") or "").strip() else None
            if story_path is None or not os.path.isfile(story_path):
                report.drop("no story file", f"{row['journal']}/{row['id']}: {story_path or '(empty story_path)'}")
                continue
            if not os.path.isfile(cover):
                report.drop("no cover image", f"{row['journal']}/{row['id']}: {cover}")
                continue
            issues.append(Issue(row["publisher"].strip(), row["journal"].strip(), row["id"].strip(), cover, _read_story(story_path), story_path, (row.get("pub_date") or "").strip() or None))
    return issues


def read_input(path: str) -> tuple[list[Issue], Cleaning]:
    report = Cleaning()
    if os.path.isdir(path):
        issues = read_folder(path, report)
    elif os.path.isfile(path) and path.lower().endswith(".csv"):
        issues = read_manifest(path, report)
    else:
        raise BuildInputError(f"{path}: not a folder of <Publisher>/Cover|Story/<Journal>/ files nor a manifest .csv")
    return issues, report


# --------------------------------------------------------------------------- cleaning


def is_blank(img) -> bool:
    import numpy as np  # noqa: PLC0415 - heavy (numpy, ~80 ms), only when near-blank covers are dropped

    arr = np.asarray(img.convert("RGB"), dtype=np.float32)
    return float((arr.mean(axis=2) > BLANK_LEVEL).mean()) > BLANK_SHARE


def _inspect(path: str, drop_blank: bool) -> tuple[str | None, bool, str | None]:
    """(content sha256, near-blank, error) of one cover: fully decoded, so a truncated file is caught
    here and not in the middle of embedding."""
    from PIL import Image  # noqa: PLC0415 - PIL, only when covers are checked

    try:
        with open(path, "rb") as f:
            data = f.read()
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            blank = drop_blank and is_blank(img)
    except Exception as exc:  # any decoder error: the cover is unusable
        return None, False, type(exc).__name__
    return hashlib.sha256(data).hexdigest(), blank, None


def clean(issues: list[Issue], report: Cleaning, drop_blank: bool = False, workers: int | None = None) -> list[Issue]:
    """Spec §3.6 step 2, in order: a repeated (journal, id) keeps its first row; empty stories are
    dropped; covers that cannot be decoded are reported by path and dropped; identical covers (same
    bytes) keep the first in (publisher, journal, id) order; optionally near-blank covers. Sets each
    kept issue's content hashes. Covers are decoded in a thread pool (the decoders release the GIL)."""
    seen: set[tuple[str, str]] = set()
    todo = []
    for it in sorted(issues, key=lambda i: (i.publisher, i.journal, i.id)):
        if it.key in seen:
            report.drop("repeated (journal, id)", f"{it.journal}/{it.id}")
            continue
        seen.add(it.key)
        if not it.story.strip():
            report.drop("empty story", it.story_path or f"{it.journal}/{it.id}")
            continue
        todo.append(it)
    with ThreadPoolExecutor(max_workers=workers or min(16, os.cpu_count() or 1)) as pool:
        inspected = list(pool.map(lambda it: _inspect(it.cover, drop_blank), todo))
    by_hash: dict[str, Issue] = {}
    kept = []
    for it, (sha, blank, error) in zip(todo, inspected):
        if error is not None:
            report.drop("unreadable image", f"{it.cover} ({error})")
            continue
        if sha in by_hash:
            first = by_hash[sha]
            report.drop("identical image", f"{it.cover} = {first.journal}/{first.id}")
            continue
        by_hash[sha] = it
        if blank:
            report.drop("near-blank image", it.cover)
            continue
        it.cover_sha = sha
        it.story_sha = hashlib.sha256(it.story.encode("utf-8")).hexdigest()
        kept.append(it)
    return kept


def publisher_counts(issues: list[Issue]) -> dict[str, int]:
    return dict(sorted(Counter(i.publisher for i in issues).items()))
