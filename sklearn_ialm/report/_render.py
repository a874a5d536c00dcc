"""The bound report's views: plain text, HTML, Markdown, JSON-ready Python, DataFrames.

Each function reads a computed :class:`~sklearn_ialm.report.BoundReport` (its records and
settings) and computes nothing of its own beyond the layout.
"""

from __future__ import annotations

import html
import math
import textwrap
from numbers import Real

import numpy as np

from ._rates import OVERALL, meets

__all__ = ["to_dict", "to_frame", "to_html", "to_markdown", "to_text"]


def plain(value):
    """``value`` as JSON-ready Python: nan becomes None, tuples lists, numpy scalars Python."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if value is OVERALL:
        return str(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def fmt(value, digits=3):
    """A cell of a table: ``-`` for None, yes / no, floats to ``digits`` decimals."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (Real, np.generic)) and not isinstance(value, (int, np.integer)):
        return "nan" if not np.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


def decisive(value, bound, direction, digits=3):
    """``value`` to at least ``digits`` decimals, and to as many more as it takes for the
    printed value to compare with the printed bound as the value does with the bound
    (42/837 = 0.0502 is "0.0502", not "0.050", against a bound 0.05 it does not meet)."""
    met = meets(value, bound, direction)
    if met is None:
        return fmt(value, digits)
    shown_bound = float(f"{bound:g}")
    for d in range(digits, 18):
        text = f"{value:.{d}f}"
        shown = float(text)
        if (shown <= shown_bound if direction == "<=" else shown >= shown_bound) == met:
            return text
    return repr(float(value))


def interval(row, prefix=""):
    """``[lower, upper]`` of a record (of its baseline with ``prefix="baseline_"``)."""
    lower, upper = row.get(prefix + "lower"), row.get(prefix + "upper")
    if lower is None:
        return "-"
    return f"[{lower:.3f}, {upper:.3f}]"


def bound_cells(report, b):
    """The cells of a bound record in the bounds table."""
    value = decisive(b["value"], b["bound"], b["direction"])
    if "k" in b and not report.weighted:  # a rate of rows: its fraction decides too
        value += f" ({b['k']}/{b['n']})"
    cells = [
        b["name"],
        value,
        decisive(b["limit"], b["bound"], b["direction"]),
        f"{b['direction']} {b['bound']:g}",
        b["status"],
    ]
    if report.has_baseline:
        base = b["baseline_value"]
        cells += [decisive(base, b["bound"], b["direction"]), b["baseline_status"]]
    return cells


def bound_header(report):
    """The header of the bounds table (each column named once: a view keyed by header, such
    as a DataFrame read from the Markdown, keeps every column)."""
    level = f"{report.confidence:.0%}"
    head = ["metric", "value", f"{level} limit", "bound", "status"]
    return head + (["baseline", "baseline status"] if report.has_baseline else [])


def has_protected(report) -> bool:
    """Whether the table has a column for the groups' role: some group is protected (a
    parity bound on every pair protects none) or left out of the constraints."""
    return any(r["protected"] is not None or r.get("excluded") for r in report.rates)


def rate_cells(report, r):
    """The cells of a rate record in the rates table."""
    cells = [
        r["rate"],
        r["condition"],
        fmt(r["group"]) if r["group"] is not OVERALL else "overall",
    ]
    if has_protected(report):
        cells.append(_protected_cell(r))
    cells += [
        str(r["n"]),
        str(r["k"]),
        fmt(r["value"]),
        interval(r),
    ]
    if report.has_baseline:
        cells += [fmt(r["baseline_value"]), interval(r, "baseline_")]
    return cells


def _protected_cell(r) -> str:
    """``yes``/``no``, or ``excluded`` for a group the fit left out of its constraints."""
    if r.get("excluded"):
        return "excluded"
    return "" if r["protected"] is None else fmt(r["protected"])


def rate_header(report):
    """The header of the rates table."""
    level = f"{report.confidence:.0%}"
    head = ["rate", "of rows", "group"] + ["protected"] * has_protected(report)
    head += ["n", "k", "value", f"{level} interval"]
    return head + (["baseline", "baseline interval"] if report.has_baseline else [])


def summary_cells(report, s):
    """The cells of an overall rate in the summary table."""
    cells = [s["metric"], fmt(s["value"]), interval(s)]
    if report.has_baseline:
        cells += [fmt(s["baseline_value"]), f"{s['difference']:+.3f}"]
    return cells


def summary_header(report):
    """The header of the summary table."""
    head = ["overall", "value", f"{report.confidence:.0%} interval"]
    return head + (["baseline", "model - baseline"] if report.has_baseline else [])


def fit_lines(report) -> list[str]:
    """Sentences on what the fit itself established (bound, certificate, umbrella)."""
    lines = []
    fit = report.fit
    if fit.get("bound_met") is not None and fit.get("bound_met_by") == "guarantee":
        lines.append(
            f"The fit's verdict is its guarantee on new data (below): bound met: "
            f"{fmt(fit['bound_met'])}."
        )
        rows = fit.get("training_rows")
        if rows is not None:
            reached = ", ".join(f"{v:.4g}" for v in rows["values"])
            bound = rows["bound"]
            bound = f"{bound:.4g}" if isinstance(bound, Real) else str(bound)
            lines.append(
                f"On its training rows (held-out rows excluded) it reached {reached} against "
                f"{bound}: reported beside the guarantee, it does not decide."
            )
    elif fit.get("bound_met") is not None:
        lines.append(f"The fit met its bound on its training rows: {fmt(fit['bound_met'])}.")
    if fit.get("fitted_at") is not None:
        lines.append(
            f"Fitted at {fit['fitted_at']} on {fit['n_samples_fit']} rows; report by "
            f"sklearn-ialm {fit['package_version']}."
        )
    cert = fit.get("certificate")
    if cert is not None:
        cmp = "<=" if cert["form"] == "difference" else ">="
        verdict = "certified" if cert["certified"] else "NOT certified"
        value = decisive(cert["value"], cert["bound"], cmp, digits=4)
        lines.append(
            f"Certificate of the fit ({cert['n_calibration']} held-out rows): certified "
            f"value {value} {cmp} {cert['bound']:g} at delta={cert['delta']:g}: "
            f"{verdict} (held-out estimate {cert['estimate']:.4g}; trained at "
            f"{cert['training_bound']:.4g})."
        )
    if cert is not None and "class_status" in cert:
        lines.append(_class_line(cert))
    lines.extend(_prequential_lines(fit.get("prequential")))
    umbrella = fit.get("umbrella")
    if umbrella is not None and "max_class_error" in umbrella:
        certified = [k for k, ok in umbrella["certified"].items() if ok]
        missing = [k for k, ok in umbrella["certified"].items() if not ok]
        held = ", ".join(f"{n} of class {k}" for k, n in umbrella["n_calibration"].items())
        lines.append(
            f"Umbrella calibration per bounded class ({held} held out), a union bound: "
            f"P(class_error[class k] on new rows > max_class_error[k] for some k in "
            f"{certified}) <= {umbrella['violation_bound']:.3g} <= delta={umbrella['delta']:g}."
            + (f" NOT certified: classes {missing}." if missing else "")
        )
    elif umbrella is not None:
        lines.append(
            f"Umbrella calibration ({umbrella['n_calibration']} held-out negatives): "
            f"P(population FPR > {umbrella['max_fpr']:g}) <= "
            f"{umbrella['violation_bound']:.3g} <= delta={umbrella['delta']:g}."
        )
    return lines


def _class_line(cert) -> str:
    """The per-class reading of a certificate on more than two classes."""
    parts = []
    for label, status in cert["class_status"].items():
        value = cert["class_values"][label]
        limit = "" if value is None or value != value else f" (certified gap {value:.4g})"
        if status == "never predicted":
            limit = "" if not limit else f" (its rates bounded, gap at most {value:.4g})"
            parts.append(f"class {label}: never predicted on the held-out rows{limit}")
        else:
            parts.append(f"class {label}: {status}{limit}")
    return (
        "Per class, each at delta on its own (all at once: a union over the classes): "
        + "; ".join(parts)
        + "."
    )


def _prequential_lines(pre) -> list[str]:
    """The prequential certificate of a stream: of its sequence of models, not its last."""
    if pre is None:
        return []
    cmp = ">=" if pre["form"] in ("ratio", "minimum") else "<="
    verdict = "certified" if pre["certified"] else "NOT certified"
    value = decisive(pre["value"], pre["bound"], cmp, digits=4)
    what = "false-positive rate " if pre["kind"] == "false_positive_rate" else ""
    return [
        f"Prequential certificate ({pre['n_rows']} stream rows, each predicted before it was "
        f"learnt): for the sequence of the stream's models as they predicted, not for the "
        f"final model, certified {what}value {value} {cmp} {pre['bound']:g} at "
        f"delta={pre['delta']:g}: {verdict} (prequential estimate {pre['estimate']:.4g})."
    ]


def caveat(report) -> str:
    """The sentence on what the intervals mean."""
    level = f"{report.confidence:.0%}"
    text = (
        f"Intervals: exact (Clopper-Pearson) at {level}, valid for rows the model was not "
        f"fitted on; the limit is the metric's worst case over them, and 'certified' means "
        f"it meets the bound (at {level}). 'met' and 'not met' are of the value on the "
        f"{report.n_samples} rows of this report, whichever rows they are (training or new)."
    )
    if report.weighted:
        text += " Weighted rates: intervals from the effective sample size (approximate)."
    return text


def title(report) -> str:
    """The title line: the estimator, its bound, the rows, the groups protected and those
    left out of the constraints."""
    text = f"{report.estimator_name}: {report.description}, on {report.n_samples} rows"
    roles = []
    if report.protected_groups is not None:
        roles.append(f"protected groups: {', '.join(map(repr, report.protected_groups))}")
    excluded = getattr(report, "excluded_groups", None)
    if excluded:
        roles.append(f"excluded from the constraints: {', '.join(map(repr, excluded))}")
    return text + (f" ({'; '.join(roles)})" if roles else "")


def to_text(report) -> str:
    """The report as plain text: its title, three tables and its sentences."""

    def table(header, rows):
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
        layout = "  ".join(f"{{:<{w}}}" for w in widths)
        return "\n".join(layout.format(*line).rstrip() for line in [header, *rows])

    parts = [
        title(report),
        "",
        table(bound_header(report), [bound_cells(report, b) for b in report.bounds]),
        "",
        table(rate_header(report), [rate_cells(report, r) for r in report.rates]),
        "",
        table(summary_header(report), [summary_cells(report, s) for s in report.summary]),
    ]
    # Sentences wrapped to the width of the tables, not one long line per sentence.
    tail = [textwrap.fill(t, 88) for t in fit_lines(report) + report.notes + [caveat(report)]]
    return "\n".join(parts + [""] + tail)


def to_html(report, document: bool = False) -> str:
    """The report as HTML: a fragment for notebooks, or (``document``) a self-contained
    page with the estimator's parameters too."""

    def table(header, rows, caption):
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
            for row in rows
        )
        return (
            f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr>"
            f"</thead><tbody>{body}</tbody></table>"
        )

    style = (
        "<style>.ialm-report table{border-collapse:collapse;margin:0.4em 0 0.8em 0;"
        "font-size:0.9em}.ialm-report caption{text-align:left;font-weight:bold;"
        "padding:0.2em 0}.ialm-report th,.ialm-report td{border:1px solid #ccc;"
        "padding:0.15em 0.5em;text-align:right}.ialm-report td:first-child,"
        ".ialm-report th:first-child{text-align:left}.ialm-report p{margin:0.3em 0;"
        "max-width:60em}</style>"
    )
    bounds = table(
        bound_header(report),
        [bound_cells(report, b) for b in report.bounds],
        "Bounds on these rows",
    )
    for word, color in (("not met", "#b00020"), ("certified", "#006400")):
        # Color the verdicts; "met" alone stays plain.
        bounds = bounds.replace(
            f"<td>{word}</td>", f'<td style="color:{color};font-weight:bold">{word}</td>'
        )
    rates = table(
        rate_header(report),
        [rate_cells(report, r) for r in report.rates],
        "Rates of predict per group",
    )
    summary = table(
        summary_header(report),
        [summary_cells(report, s) for s in report.summary],
        "Overall",
    )
    paragraphs = "".join(
        f"<p>{html.escape(line)}</p>"
        for line in fit_lines(report) + report.notes + [caveat(report)]
    )
    params = ""
    if document and report.fit.get("params"):
        params = table(
            ["parameter", "value"],
            [[k, repr(v)] for k, v in report.fit["params"].items()],
            f"Parameters of {report.estimator_name}",
        )
    body = (
        f'<div class="ialm-report">{style}<p><b>{html.escape(title(report))}</b></p>'
        f"{bounds}{rates}{summary}{paragraphs}{params}</div>"
    )
    if not document:
        return body
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title(report))}</title>\n</head>\n<body>\n{body}\n</body>\n"
        "</html>\n"
    )


def to_markdown(report) -> str:
    """A short Markdown summary for a model card or a README.

    Returns
    -------
    str
        A line naming the bound, the bounds table, the per-group rates table, the overall
        rates and the sentences of the text view.
    """

    def table(header, rows):
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
        return "\n".join(lines)

    level = f"{report.confidence:.0%}"
    rates_header = ["rate", "group", "n", "value", f"{level} interval"]
    if report.has_baseline:
        rates_header.append("baseline")
    rate_rows = []
    for r in report.rates:
        group = "overall" if r["group"] is OVERALL else fmt(r["group"])
        group += " (excluded)" if r.get("excluded") else ""
        row = [r["rate"], group, r["n"], fmt(r["value"]), interval(r)]
        if report.has_baseline:
            row.append(fmt(r["baseline_value"]))
        rate_rows.append(row)
    parts = [
        f"**{title(report)}**",
        "",
        table(bound_header(report), [bound_cells(report, b) for b in report.bounds]),
        "",
        table(rates_header, rate_rows),
        "",
        table(summary_header(report), [summary_cells(report, s) for s in report.summary]),
        "",
        " ".join(fit_lines(report) + report.notes + [caveat(report)]),
    ]
    return "\n".join(parts) + "\n"


def to_dict(report) -> dict:
    """:meth:`BoundReport.to_dict <sklearn_ialm.BoundReport.to_dict>` of ``report``."""
    return plain(
        {
            "estimator": report.estimator_name,
            "description": report.description,
            "protected_groups": report.protected_groups,
            "excluded_groups": getattr(report, "excluded_groups", None),
            "n_samples": report.n_samples,
            "confidence": report.confidence,
            "weighted": report.weighted,
            "bounds": report.bounds,
            "rates": report.rates,
            "summary": report.summary,
            "fit": report.fit,
            "notes": report.notes,
        }
    )


def to_frame(report, table: str = "rates"):
    """:meth:`BoundReport.to_frame <sklearn_ialm.BoundReport.to_frame>` of ``report``."""
    import pandas as pd

    if table == "rates":
        # Plain columns, no index: intersections are tuples, and tuples beside the
        # "overall" string cannot be sorted into an index level.
        frame = pd.DataFrame.from_records(report.rates)
        frame["group"] = [str(g) if g is OVERALL else g for g in frame["group"]]
        return frame
    if table == "bounds":
        return pd.DataFrame.from_records(report.bounds).set_index("name")
    if table == "summary":
        return pd.DataFrame.from_records(report.summary).set_index("metric")
    raise ValueError(f"table must be 'rates', 'bounds' or 'summary', got {table!r}.")
