"""Every run against the baseline on each headline metric, doc by doc, with one rule for "changed".

A row: the difference (run minus baseline) on the docs both scored, its 95 % interval, a p-value
(McNemar's exact test for right/wrong metrics, else the paired bootstrap's: :mod:`lmms_eval_earthsci.core.scoring.stats`),
and the p-value adjusted for the number of rows (Benjamini-Hochberg over every row of the report).
**Changed** means: adjusted p below :data:`ALPHA`. The interval is the one that goes with the row's test
(Tango's score interval with McNemar's test, the percentile interval with the bootstrap's p), so the two
part only where a row's note says why: the correction, a handful of discordant docs (the exact test is
more cautious than the score interval), or a bootstrap p at the edge of 0.05.
"""

from __future__ import annotations

from dataclasses import dataclass

from lmms_eval_earthsci.commands.report.intervals import aggregation, bootstrap_options, doc_items
from lmms_eval_earthsci.commands.report.position_bias import HEAD as CIRCULAR_HEAD
from lmms_eval_earthsci.commands.report.position_bias import question_items
from lmms_eval_earthsci.commands.report.runs import Run
from lmms_eval_earthsci.core.benchmark import Benchmark
from lmms_eval_earthsci.core.scoring.stats import MCNEMAR, Paired, adjust, paired

ALPHA = 0.05
RULE = (
    "**Changed** = the adjusted p (Benjamini-Hochberg over all {n} comparisons of this report, 5% false discovery rate) is below 0.05. "
    "p: McNemar's exact test on the discordant docs where every doc is right or wrong (the interval: Tango's score interval for paired proportions), "
    "else the paired bootstrap's (twice the smaller share of resampled differences on either side of 0; the interval: its percentile interval). "
    "Where the interval and the raw p part (a handful of discordant docs, the correction), the row's note says why: the adjusted p decides. "
    "`–` (no difference: a value missing in a run) says nothing about 0."
)


@dataclass
class Comparison:
    bench: Benchmark
    task: str
    metric: str
    run: Run
    base: Run
    result: Paired | None  # None: a run without samples (nothing to compare doc by doc)
    p_adjusted: float | None = None
    versions_differ: bool = False

    @property
    def changed(self) -> bool | None:
        """The rule (module docstring); None where there is no test."""
        return None if self.p_adjusted is None else self.p_adjusted < ALPHA

    @property
    def direction(self) -> str:
        """``better`` / ``worse`` by lmms-eval's ``higher_is_better`` of the metric, else ``higher`` / ``lower``."""
        d = self.result.diff if self.result else None
        if d is None or d == 0:
            return ""
        hib = (self.run.higher_is_better.get(self.task) or self.base.higher_is_better.get(self.task) or {}).get(self.metric)
        up = d > 0
        if hib is None:
            return "higher" if up else "lower"
        return "better" if up == bool(hib) else "worse"

    @property
    def note(self) -> str:
        notes = []
        r = self.result
        if r is not None and r.p is not None and r.interval.low is not None:
            if (r.p < ALPHA) != r.interval.excludes(0.0):
                if r.test == MCNEMAR:
                    n = sum(r.discordant or (0, 0))
                    notes.append(f"the interval {'excludes' if r.interval.excludes(0.0) else 'holds'} 0 but the exact test on {n} discordant docs {'does not reject' if r.p >= ALPHA else 'rejects'}: the test decides")
                else:
                    notes.append("bootstrap p and interval at the edge of 0.05")
            if r.p < ALPHA and not self.changed:
                notes.append("p < 0.05 before the correction only")
        if r is not None and r.common == 0:
            notes.append("no doc in common: the runs scored other docs (another --limit or --offset), nothing to compare")
        if self.versions_differ:
            notes.append("task versions differ")
        return "; ".join(notes)


def compare(runs: list[Run], base: Run, keys: list[tuple[Benchmark, str, str]]) -> list[Comparison]:
    """Each run but the baseline against it on each (benchmark, task, metric) both have; p-values
    adjusted over all rows together."""
    rows: list[Comparison] = []
    options = bootstrap_options()
    if len(runs) < 2 or options["resamples"] <= 0:
        return rows
    for b, t, m in keys:
        if not base.value(t, m)[0]:
            continue
        # circular accuracy is a question's (right at every rotation): compared question by question
        per_question = m == CIRCULAR_HEAD
        a_items = question_items(base, t) if per_question else doc_items(base, t, m)
        for r in runs:
            if r is base or not r.value(t, m)[0]:
                continue
            b_items = question_items(r, t) if per_question else doc_items(r, t, m)
            res = None
            if a_items is not None and b_items is not None:
                dotted = "lmms_eval_earthsci.core.scoring.metrics.mean_present" if per_question else aggregation(r, t, m)
                res = paired(b_items, a_items, dotted, options["resamples"], options["seed"])
            vers = {str(v) for v in (base.versions.get(t), r.versions.get(t)) if v is not None}
            rows.append(Comparison(b, t, m, r, base, res, versions_differ=len(vers) > 1))
    for c, q in zip(rows, adjust([c.result.p if c.result else None for c in rows])):
        c.p_adjusted = q
    return rows
