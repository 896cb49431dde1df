"""``lmms-eval-earthsci report OUTPUT_PATH...``: tables and plots from lmms-eval output folders.

For one or several runs (each an lmms-eval ``--output_path``, with ``--log_samples`` for the counts) it
writes ``report.md`` (and prints it): per benchmark, every metric and breakdown of our tasks, one column
per run, then the papers' published numbers for the same task and metric (bundled in
``paper_numbers/``, each naming its source table); PNG bar charts by subject / sphere / split, run
against run, with one paper model's values marked; and the counts that matter: docs scored,
extraction failures, judge failures and cache hits.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from lmms_eval_earthsci import PAPER_NUMBERS_DIR

BENCHMARKS = {"emma": "EMMA", "msearth": "MSEarth", "scifibench": "SciFIBench"}


class ReportError(ValueError):
    """A results folder or file the report cannot use; the message names it."""


@dataclass
class Run:
    label: str
    path: str
    results: dict  # task -> {metric: value} (filter suffix removed)
    samples: dict = field(default_factory=dict)  # task -> list of sample dicts


def benchmark_of(task: str) -> str | None:
    for prefix in BENCHMARKS:
        if task == prefix or task.startswith(prefix + "_"):
            return prefix
    return None


# --------------------------------------------------------------------------- reading runs


def _load_json(path: str) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not a readable lmms-eval results JSON ({exc})") from exc


def _load_samples(path: str) -> list[dict]:
    out = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    out.append(json.loads(line))
                except ValueError as exc:
                    raise ReportError(f"{path}, line {n}: not JSON ({exc}); the run may have been cut short") from exc
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc})") from exc
    return out


def read_runs(paths: Sequence[str]) -> list[Run]:
    """Every ``*_results.json`` under each path is one run (samples: the same timestamp's JSONL)."""
    runs = []
    for base in paths:
        if not os.path.exists(base):
            raise ReportError(f"{base}: no such folder")
        found = sorted(glob.glob(os.path.join(base, "**", "*_results.json"), recursive=True)) if os.path.isdir(base) else [base]
        if not found:
            raise ReportError(f"{base}: no *_results.json inside (was lmms-eval given --output_path {base}, and did it finish?)")
        for path in found:
            data = _load_json(path)
            if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
                raise ReportError(f"{path}: has no 'results' table; not an lmms-eval results file")
            results = {}
            for task, metrics in data["results"].items():
                if not isinstance(metrics, dict):
                    raise ReportError(f"{path}: results for {task!r} are not a table")
                # "metric,filter": the filter name is kept unless it is lmms-eval's default "none"
                results[task] = {(k.split(",", 1)[0] if k.endswith(",none") else k): v for k, v in metrics.items() if "," in k and "_stderr" not in k}
            stamp = os.path.basename(path)[: -len("_results.json")]
            samples = {}
            for sp in glob.glob(os.path.join(os.path.dirname(path), f"{stamp}_samples_*.jsonl")):
                samples[sp.rsplit("_samples_", 1)[1][: -len(".jsonl")]] = _load_samples(sp)
            cfg = data.get("config") or {}
            model = str(cfg.get("model") or "run")
            margs = str(cfg.get("model_args") or "")
            m = re.search(r"(?:pretrained|model)=([^,]+)", margs)
            label = f"{os.path.basename(os.path.normpath(base))}: {model}" + (f" {os.path.basename(m.group(1))}" if m else "")
            if len(found) > 1:
                label += f" [{stamp}]"
            runs.append(Run(label, path, results, samples))
    labels = [r.label for r in runs]
    for i, r in enumerate(runs):  # keep columns distinct
        if labels.count(r.label) > 1:
            r.label = f"{r.label} #{i + 1}"
    return runs


# --------------------------------------------------------------------------- paper numbers


@functools.lru_cache(maxsize=None)
def paper_entries(bench: str) -> tuple[list[dict], str]:
    """[{model, task, metric, value}] of the paper's tables for a benchmark, and the source note."""
    path = os.path.join(PAPER_NUMBERS_DIR, f"{bench}.json")
    if not os.path.exists(path):
        return [], ""
    data = _load_json(path)
    out: list[dict] = []
    if bench == "emma":
        for row in data["rows"]:
            sfx = "_direct" if row.get("strategy") == "Direct" else ""
            label = row["model"] + (f" ({row['strategy']})" if row.get("strategy") else "")
            for col, spec in data["columns"].items():
                if row.get(col) is None:
                    continue
                size, subject = col.split("_", 1)
                task = f"emma_{size}{sfx}" + ("" if subject == "overall" else f"_{subject}")
                out.append({"model": label, "task": task, "metric": data["metric"], "value": row[col]})
        source = data["source"]
    elif bench == "msearth":
        for row in data["rows"]:
            for k, v in row.items():
                if k not in ("model", "task") and v is not None:
                    out.append({"model": row["model"], "task": row["task"], "metric": k, "value": v})
        source = "; ".join(f"{k}: {v}" for k, v in data["sources"].items()) + ". " + data.get("note", "")
    else:
        for row in data["rows"]:
            for k, v in row.items():
                if k != "model" and v is not None:
                    out.append({"model": row["model"], "task": k, "metric": data["metric"], "value": v})
        source = data["source"]
    return out, source


# --------------------------------------------------------------------------- counts


def counts(run: Run, tasks: Iterable[str]) -> dict[str, dict[str, int]]:
    """Per task: docs scored, extraction failures (no answer found), judge failures, cache hits."""
    out = {}
    for task in tasks:
        ss = run.samples.get(task)
        if ss is None:
            continue
        c = {"docs": len(ss), "no_answer": 0, "judge_failed": 0, "judge_cache_hits": 0}
        for s in ss:
            for v in s.values():
                if not isinstance(v, dict):
                    continue
                if v.get("rule") in ("none", "no-answer") or v.get("stage") in ("none", "ambiguous"):
                    c["no_answer"] += 1
                if "status" in v and "cached" in v:  # a judge log
                    c["judge_failed"] += v["status"] in ("request_failed", "parse_failed")
                    c["judge_cache_hits"] += bool(v["cached"])
        out[task] = c
    return out


# --------------------------------------------------------------------------- rendering


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        return f"{v:.2f}"
    return str(v)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _task_order(tasks: Iterable[str]) -> list[str]:
    return sorted(set(tasks), key=lambda t: (t.count("_"), t))


def benchmark_section(bench: str, runs: list[Run]) -> tuple[str, list[tuple[str, str]]]:
    tasks = _task_order(t for r in runs for t in r.results if benchmark_of(t) == bench)
    keys: list[tuple[str, str]] = []
    for t in tasks:
        metrics = sorted({m for r in runs for m in r.results.get(t, {})}, key=lambda m: (("acc" not in m and "score" not in m), m))
        keys += [(t, m) for m in metrics]
    rows = [[t, m] + [_fmt(r.results.get(t, {}).get(m)) if m in r.results.get(t, {}) else "–" for r in runs] for t, m in keys]
    text = [f"## {BENCHMARKS[bench]}", "", _table(["task", "metric"] + [r.label for r in runs], rows), ""]
    entries, source = paper_entries(bench)
    present = set(keys)
    ref = [e for e in entries if (e["task"], e["metric"]) in present]
    if ref:
        cols = [k for k in keys if any((e["task"], e["metric"]) == k for e in ref)]
        models = list(dict.fromkeys(e["model"] for e in ref))
        val = {(e["model"], e["task"], e["metric"]): e["value"] for e in ref}
        prow = [[m, "paper"] + [_fmt(val.get((m, t, k))) if (m, t, k) in val else "–" for t, k in cols] for m in models]
        text += [f"Paper reference ({source}):", "", _table(["paper model", "source"] + [f"{t} · {k}" for t, k in cols], prow), ""]
    cnt_rows = []
    for r in runs:
        for t, c in counts(r, tasks).items():
            cnt_rows.append([r.label, t, str(c["docs"]), str(c["no_answer"]), str(c["judge_failed"]), str(c["judge_cache_hits"])])
    if cnt_rows:
        text += ["Counts:", "", _table(["run", "task", "docs scored", "no answer extracted", "judge failures", "judge cache hits"], cnt_rows), ""]
    return "\n".join(text), keys


def _plot_specs(bench: str, keys: list[tuple[str, str]]) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(title, [(bar label, task, metric)]) per chart."""
    specs = []
    if bench == "emma":
        for size in ("mini", "full"):
            for sfx, name in (("", "CoT"), ("_direct", "Direct"), ("_judge", "judge")):
                bars = [(s, f"emma_{size}{sfx}_{s}", "emma_acc") for s in ("math", "physics", "chemistry", "coding")]
                bars = [b for b in bars if (b[1], b[2]) in keys]
                if bars:
                    specs.append((f"EMMA-{size} ({name}): emma_acc by subject", bars))
    elif bench == "msearth":
        for task in ("msearth_mcq", "msearth_mcq_nocap", "msearth_open"):
            for field_, name in (("sphere", "primary sphere"), ("image", "image type")):
                bars = [(m.split(f"msearth_{field_}_", 1)[1], t, m) for t, m in keys if t == task and m.startswith(f"msearth_{field_}_")]
                if bars:
                    specs.append((f"{task}: accuracy by {name}", bars))
    else:
        bars = [(t.replace("scifibench_", ""), t, "scifibench_acc") for t, m in keys if m == "scifibench_acc" and t.count("_") == 2]
        if bars:
            specs.append(("SciFIBench: scifibench_acc by split", bars))
    return specs


def plot(bench: str, runs: list[Run], keys: list[tuple[str, str]], out_dir: str, paper_model: str | None) -> list[str]:
    specs = _plot_specs(bench, keys)
    if not specs:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries, _ = paper_entries(bench)
    by_model: dict[str, dict[tuple[str, str], float]] = {}
    for e in entries:
        by_model.setdefault(e["model"], {})[(e["task"], e["metric"])] = e["value"]
    written = []
    for i, (title, bars) in enumerate(specs):
        pick = paper_model
        if pick is None:  # the first paper model with a value for every bar, if any
            pick = next((m for m, vals in by_model.items() if all((t, k) in vals for _, t, k in bars)), None)
        ref = {key: (pick, v) for key, v in by_model.get(pick, {}).items()}
        fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(bars) * max(1, len(runs)) / 2 + 3), 3.6))
        width = 0.8 / max(1, len(runs))
        for j, r in enumerate(runs):
            vals = [r.results.get(t, {}).get(k) for _, t, k in bars]
            xs = [x + j * width for x in range(len(bars))]
            ax.bar(xs, [v if isinstance(v, (int, float)) else 0 for v in vals], width, label=r.label)
        marked = [(x, ref[(t, k)]) for x, (_, t, k) in enumerate(bars) if (t, k) in ref]
        if marked:
            xs = [x + 0.4 - width / 2 for x, _ in marked]
            ax.scatter(xs, [v for _, (_, v) in marked], marker="_", s=900, color="black", zorder=3, label=f"paper: {marked[0][1][0]}")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(bars))])
        ax.set_xticklabels([b[0] for b in bars], rotation=30, ha="right", fontsize=8)
        percent_scale = all(not k.endswith("_score") for _, _, k in bars)
        ax.set_ylabel("%" if percent_scale else "score")
        if percent_scale:
            ax.set_ylim(0, 100)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{bench}_{i + 1}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def write_report(paths: Sequence[str], out_dir: str | None = None, paper_model: str | None = None) -> tuple[str, str]:
    """Write ``report.md`` and the PNGs; returns (report path, markdown)."""
    runs = read_runs(paths)
    out_dir = out_dir or os.path.join(paths[0] if os.path.isdir(paths[0]) else os.path.dirname(paths[0]), "report")
    os.makedirs(out_dir, exist_ok=True)
    benches = [b for b in BENCHMARKS if any(benchmark_of(t) == b for r in runs for t in r.results)]
    if not benches:
        raise ReportError(f"{', '.join(paths)}: no results of EMMA, MSEarth or SciFIBench tasks")
    md = ["# lmms_eval_earthsci report", "", "Runs: " + "; ".join(f"`{r.label}` ({r.path})" for r in runs), ""]
    for b in benches:
        section, keys = benchmark_section(b, runs)
        md.append(section)
        for png in plot(b, runs, keys, out_dir, paper_model):
            md += [f"![{os.path.basename(png)}]({os.path.basename(png)})", ""]
    text = "\n".join(md)
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write(text + "\n")
    return path, text
