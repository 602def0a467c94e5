"""Grading a reproduction's findings by direction and by size.

A source document states findings ("the scavenger queue collapses the α
flow's throughput") and gives numbers (Table I). A model can get the
direction of a finding right with numbers far from the document's; a report
that only checks directions oversells it. Here a :class:`Finding` carries:

- ``direction``: whether the model shows the effect the document states
  (the comparison the finding makes, on the model's numbers);
- ``cells``: the numbers of the document the finding rests on, each beside
  the model's (a :class:`Cell`), with their ratio model / document;
- ``factor``: the tolerance on those ratios, a factor of 2 unless the
  finding says otherwise (:data:`DEFAULT_FACTOR`).

and is graded (:func:`grade`):

- **holds**: the direction holds and every cell is within the factor;
- **direction only**: the direction holds, some size does not;
- **fails**: the direction does not hold;
- **not graded**: the runs the finding rests on did not measure what it is
  about (an emulated run the machine held up beyond the reproduction's own
  threshold), or every run gives the same number whatever the parameter the
  finding varies, so the comparison shows nothing: the finding is shown with
  its reason (``not_graded``), never counted as holding or failing.

A cell whose model value comes from a parameter fitted to that very number
(``fitted=True``) is shown, with the fit said, but never counted as
evidence: it agrees by construction. A cell whose model number is already
counted by another finding (``elsewhere``: that finding) is shown but not
counted again: one set of numbers supports one finding. A finding for which
the document gives no number is graded on its direction, and says so.

A reproduction's exit status follows: 0 if every finding holds, 1 otherwise
(:func:`exit_status`; a finding not graded does not hold).

Every reproduction's ``results.json`` carries its graded findings; the
table of all of them, per document and grade, is :func:`summary_table`
(``alphaqos reproduce-summary``, which the README's table comes from).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_FACTOR", "DIRECTION_ONLY", "FAILS", "GRADES", "HOLDS", "NOT_GRADED", "Cell", "Finding", "count_grades",
           "exit_status", "findings_markdown", "grade", "markdown_table", "graded_findings", "report_head", "summary_table"]

#: A model number "matches" the document's within this factor either way.
DEFAULT_FACTOR = 2.0

HOLDS = "holds"
DIRECTION_ONLY = "direction only"
FAILS = "fails"
NOT_GRADED = "not graded"
#: Every grade, in the order reports count them.
GRADES = (HOLDS, DIRECTION_ONLY, FAILS, NOT_GRADED)

#: How a grade is shown in a markdown report.
MARKS = {HOLDS: "✅ holds", DIRECTION_ONLY: "🟡 direction only", FAILS: "❌ fails", NOT_GRADED: "⚪ not graded"}


@dataclass(frozen=True)
class Cell:
    """One number of the document beside the model's.

    ``paper`` None: the document gives no number for it (no ratio).
    ``fitted``: the model's value rests on a parameter fitted to this very
    number; shown, not counted. ``why`` says what was fitted to it.
    ``bound``: the document's number is an upper bound ("at most", "below"),
    met by any model value up to it times the tolerance, zero included.
    ``elsewhere``: the finding that counts this model number already (the
    same run's number against the same, or the same table's, document
    value); shown here, not counted twice."""

    label: str
    model: float
    paper: float | None
    fitted: bool = False
    why: str = ""
    bound: bool = False
    elsewhere: str = ""

    @property
    def ratio(self) -> float | None:
        """model / paper; None without a paper value, inf for paper 0 and a
        non-zero model, 1 for both 0."""
        if self.paper is None:
            return None
        if self.paper == 0:
            return 1.0 if self.model == 0 else math.inf
        return self.model / self.paper

    def within(self, factor: float) -> bool | None:
        """Whether model and paper agree within ``factor`` either way (None:
        nothing to compare)."""
        ratio = self.ratio
        if ratio is None:
            return None
        if self.bound:
            return ratio <= factor
        return ratio > 0 and 1 / factor <= ratio <= factor


@dataclass
class Finding:
    """A finding of the document, judged on the model's numbers."""

    claim: str
    direction: bool
    evidence: str
    cells: list[Cell] = field(default_factory=list)
    factor: float = DEFAULT_FACTOR
    #: Why the finding is not graded (see the module doc); empty: graded.
    not_graded: str = ""

    @property
    def counted(self) -> list[Cell]:
        """The cells that count as evidence: a paper value, not fitted, not
        counted by another finding."""
        return [c for c in self.cells if c.paper is not None and not c.fitted and not c.elsewhere]

    @property
    def grade(self) -> str:
        if self.not_graded:
            return NOT_GRADED
        return grade(self.direction, self.counted, self.factor)

    @property
    def holds(self) -> bool:
        return self.grade == HOLDS

    @property
    def outside(self) -> list[Cell]:
        """The counted cells outside the tolerance."""
        return [c for c in self.counted if not c.within(self.factor)]

    def sizes(self) -> str:
        """One sentence on the sizes: how many cells are within the factor,
        which are not, which were fitted, or that the document has none."""
        if self.not_graded:
            return f"not graded: {self.not_graded}"
        parts = []
        if self.counted:
            within = len(self.counted) - len(self.outside)
            parts.append(f"sizes: {within} of {len(self.counted)} within a factor of {self.factor:g} of the document")
            if self.outside:
                parts.append("outside: " + ", ".join(f"{c.label} {fmt_ratio(c.ratio)}" for c in self.outside))
        elif any(c.elsewhere for c in self.cells):
            parts.append("its numbers are counted by other findings: graded on its direction")
        else:
            parts.append("the document gives no number for this finding: graded on its direction")
        for c in self.cells:
            if c.fitted:
                parts.append(f"{c.label} not counted: {c.why or 'a parameter was fitted to it'}")
        elsewhere = [c for c in self.cells if c.elsewhere and not c.fitted]
        for where in dict.fromkeys(c.elsewhere for c in elsewhere):
            labels = ", ".join(c.label for c in elsewhere if c.elsewhere == where)
            parts.append(f"{labels} not counted again (counted by: {where})")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "grade": self.grade,
            "holds": self.holds,
            "direction": self.direction,
            "factor": self.factor,
            "not_graded": self.not_graded,
            "evidence": self.evidence,
            "cells": [
                {"label": c.label, "model": c.model, "paper": c.paper, "ratio": _json_ratio(c.ratio),
                 "within": c.within(self.factor), "fitted": c.fitted, "bound": c.bound,
                 "elsewhere": c.elsewhere}
                for c in self.cells
            ],
        }  # fmt: skip


def grade(direction: bool, cells: list[Cell], factor: float = DEFAULT_FACTOR) -> str:
    """holds / direction only / fails, from the direction and the counted cells."""
    if not direction:
        return FAILS
    return HOLDS if all(c.within(factor) for c in cells) else DIRECTION_ONLY


def exit_status(findings: list[Finding]) -> int:
    """0 if every finding holds, else 1."""
    return 0 if all(f.holds for f in findings) else 1


def fmt_ratio(ratio: float | None) -> str:
    """``×0.95``; ``×∞`` for a number where the document has 0; ``-`` without one."""
    if ratio is None:
        return "-"
    if math.isinf(ratio):
        return "×∞"
    if ratio == 0:
        return "×0"
    return f"×{ratio:.2f}" if ratio >= 0.01 else f"×{ratio:.1e}"


def fmt_cell(model: str, paper: str, cell: Cell, factor: float = DEFAULT_FACTOR) -> str:
    """``3.24 vs 0.34 (×9.53 †)``: † outside the factor, "fitted" for a fit."""
    note = ", fitted" if cell.fitted else ""
    mark = "" if cell.fitted or cell.within(factor) in (True, None) else " †"
    return f"{model} vs {paper} ({fmt_ratio(cell.ratio)}{mark}{note})"


def _json_ratio(ratio: float | None) -> float | str | None:
    return "inf" if ratio is not None and math.isinf(ratio) else ratio


# --- the parts every reproduction's report.md shares ------------------------------


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Rows of equal keys as a markdown table, the keys as its head."""
    heads = list(rows[0])
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
    lines += ["| " + " | ".join(str(row[h]) for h in heads) + " |" for row in rows]
    return "\n".join(lines)


def report_head(title: str, mode: str, measured: dict[str, dict[str, Any]], wall_time_s: float) -> list[str]:
    """The title and the line on how the runs were made (``mode``: what
    kind of run it was); each run's ``wall_time_s`` adds up to the run time."""
    cpu = sum(m["wall_time_s"] for m in measured.values())
    return [
        f"# Reproduction: {title}", "",
        f"Mode: **{mode}**; {len(measured)} runs, {wall_time_s:.0f} s wall time ({cpu:.0f} s of run time over the "
        "workers). Every run's scenario is in `scenarios/`, to be rerun with `alphaqos run`.",
    ]  # fmt: skip


def findings_markdown(found: list[Finding], grading: str) -> list[str]:
    """The findings section: how many of each grade, one line per finding
    (claim, evidence, sizes), then ``grading``, how they are graded."""
    grades = count_grades(f.grade for f in found)
    summary = ", ".join(f"{grades[g]} {g}" for g in GRADES if grades[g])
    md = ["", "## Findings", "", f"{len(found)} findings: {summary}.", ""]
    md += [f"- {MARKS[f.grade]}: {f.claim}. *{f.evidence}.* {f.sizes()[:1].upper()}{f.sizes()[1:]}." for f in found]
    return md + ["", "### How findings are graded", "", grading]


def count_grades(grades: Any) -> Counter[str]:
    """How many of each grade; refuses one that is not a grade."""
    counts = Counter(grades)
    unknown = set(counts) - set(GRADES)
    if unknown:
        raise ValueError(f"unknown grade(s) {sorted(unknown)}: a finding is one of {', '.join(GRADES)}")
    return counts


def summary_table(results: dict[str, dict[str, Any]]) -> str:
    """The findings of every reproduction counted by grade, one row per
    document (with the mode and the commit its results came from), and the
    total: ``results`` maps a reproduction's name to its ``results.json``
    or what :func:`graded_findings` keeps of it."""
    rows, total = [], Counter()
    for name, document in results.items():
        counts = count_grades(f["grade"] for f in document["findings"])
        total += counts
        rows.append({"reproduction": name, "mode": "quick" if document["quick"] else "full",
                     "commit": document.get("commit") or "-", "findings": sum(counts.values()),
                     **{g: counts[g] for g in GRADES}})  # fmt: skip
    rows.append({"reproduction": "all", "mode": "", "commit": "", "findings": sum(total.values()), **{g: total[g] for g in GRADES}})
    return markdown_table(rows)


def graded_findings(document: dict[str, Any]) -> dict[str, Any]:
    """What the summary keeps of a reproduction's ``results.json``: its
    mode, commit and each finding's claim, grade and reason if not graded."""
    keep = ("claim", "grade", "not_graded")
    return {"quick": document["quick"], "commit": document.get("commit"),
            "findings": [{k: f.get(k, "") for k in keep} for f in document["findings"]]}  # fmt: skip


def doc_section(doc: str, heading: str) -> str:
    """The part of a module docstring after the line ``heading`` (and its
    blank line), its two-space indentation removed: a reproduction keeps
    the parameters its document leaves open in its module doc and prints
    them in its report."""
    body = doc.split(heading + "\n\n", 1)[1]
    return "\n".join(line[2:] if line.startswith("  ") else line for line in body.splitlines())


def save_figure(fig: Any, path: Path) -> Path:
    """Write a report's figure at the resolution every report uses."""
    fig.savefig(path, dpi=110)
    return path
