"""Build ``benchmarks/results/speed.md`` from the parts' saved results (``speed_<part>.json``)."""

from __future__ import annotations

import math

import numpy as np

from benchmarks.speed.common import BOUND, RESULTS, load

# The targets (issue 13) and the paper's pass counts they refer to.
PAPER_PASSES = {"spambase": 18.8, "a9a": 3.87, "bank": 4.85}
PAPER_NOTE = {
    "spambase": "paper's median 18.8 (range 11.0 .. 39.2)",
    "a9a": "paper's median 3.87 (range 3.56 .. 4.46)",
    "bank": "paper's range 4.72 .. 4.85 (no median given): its upper end",
}


#: Issue 21's range of the time-per-row target (dense): rows from 1e5 to 1e7.
SCALING_RANGE = (100_000, 10_000_000)

#: What was tried against the missed targets and not kept, with its figures (fixed text: the
#: experiments are not part of this benchmark's run; each names how to repeat it).
TRIED = """## Tried and not kept (session 9; one thread, CPU against LogisticRegression)

- **Spambase's FNR is the precision of the logistic fit, not its conditioning.** At max_fpr
  0.05 the Neyman-Pearson fit is our logistic regression with its threshold moved (one
  solve). Whitening the standardised features (PCA, every component) before the fit: test
  FNR 0.1244 against LogisticRegression's 0.1020 over 10 splits (unwhitened 0.1239); at
  tol=3e-4, neither converges in 300 passes (FNR 0.1143 unwhitened, 0.1121 whitened): the
  features' correlations are not what holds the fit back.
- **A fixed subsample per reference point** (the reference's values on it computed once,
  half the work of each test): the Neyman-Pearson fit on dense 1e6 x 20 (moderate) took
  20.7 passes instead of 13.6, its tests failing again and again on the same rows. A fresh
  subsample per test, copied in order, is what landed.
- **The compiled pass reading a subsample's rows in place** (no copy): 0.19 ms against
  numpy's 0.17 ms for 1000 random rows of 1e6 x 20: random reads cost the same either way.
- **Longer intervals between tests** (minibatch work up to twice a test's cost, not once):
  the moderate fairness fit took 9.2 passes and 3 solves instead of 5.3 and 2; **a looser
  standard error for the subsample** (0.3 of tol instead of 0.2): the strong case did not
  converge.
"""


def f(v, nd=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}g}" if abs(v) < 1e-3 or abs(v) >= 1e4 else f"{v:.{nd}f}"
    return str(v)


def verdict(ok):
    return "met" if ok else "**NOT MET**"


def _get(rows, **kw):
    for r in rows:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def _facts(saved):
    fa = saved.get("facts", {})
    return (
        f"load average {fa.get('load', float('nan')):.2f} at the start, "
        f"{fa.get('load_end', float('nan')):.2f} at the end; {saved['seconds']:.0f} s"
    )


def anchor_section(saved, targets):
    rows = saved["rows"]
    out = ["## Anchor task and spambase (one process, `--parts anchor`)", ""]
    out.append(f"Run: {_facts(saved)}. CPU = `time.process_time` (all threads of the process).")
    out.append("")
    for data, task, threads in [
        ("anchor", "fairness", "1 thread"),
        ("anchor", "fairness", "default threads"),
        ("anchor", "np", "1 thread"),
        ("anchor", "np", "default threads"),
        ("spambase", "np", "1 thread"),
    ]:
        sel = [r for r in rows if (r["data"], r["task"], r["threads"]) == (data, task, threads)]
        if not sel:
            continue
        lr = _get(sel, method="LogisticRegression")
        out.append(f"### {data}, {task}, {threads}")
        out.append("")
        if task == "fairness":
            out.append(
                "| method | CPU s | wall s | CPU / LR | wall / LR | DP gap train | DP gap test"
                " | test acc | work |"
            )
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        else:
            out.append(
                "| method | CPU s | wall s | CPU / LR | wall / LR | FPR train | FPR test"
                " | FNR test | test acc | work |"
            )
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in sel:
            cells = [
                f"{r['method']} (x{r['repeats']})",
                f(r["cpu"]),
                f(r["wall"]),
                f"{r['cpu'] / lr['cpu']:.1f}",
                f"{r['wall'] / lr['wall']:.1f}",
            ]
            if task == "fairness":
                cells += [f(r["dp_train"]), f(r["dp_test"])]
            else:
                cells += [f(r["fpr_train"]), f(r["fpr_test"]), f(r["fnr_test"])]
            cells += [f(r["acc_test"]), r["work"]]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    for threads in ("1 thread", "default threads"):
        sel = [r for r in rows if r["data"] == "anchor" and r["threads"] == threads]
        fair = _get(sel, task="fairness", method="FairLogisticClassifier")
        lr = _get(sel, task="fairness", method="LogisticRegression")
        eg = _get(sel, task="fairness", method="ExponentiatedGradient")
        # With default threads the process CPU time counts the BLAS threads' spinning while
        # they wait for a core (a shared machine): that verdict uses wall time.
        key = "cpu" if threads == "1 thread" else "wall"
        if fair and lr:
            ratio = fair[key] / lr[key]
            targets.append(
                (
                    f"anchor, {threads}: FairLogisticClassifier (DP {BOUND}) fit <= 1.5x "
                    "LogisticRegression",
                    f"{fair['cpu'] / lr['cpu']:.1f}x CPU, {fair['wall'] / lr['wall']:.1f}x wall"
                    f" (verdict on {key})",
                    verdict(ratio <= 1.5),
                )
            )
            targets.append(
                (
                    f"anchor, {threads}: its bound met on hard training predictions",
                    f"DP gap of predict (fairlearn) {fair['dp_train']:.4f} (test "
                    f"{fair['dp_test']:.4f})",
                    verdict(fair["dp_train"] <= BOUND + 1e-12),
                )
            )
        if fair and eg:
            ratio = eg[key] / fair[key]
            targets.append(
                (
                    f"anchor, {threads}: >= 20x faster than ExponentiatedGradient",
                    f"EG / ours = {ratio:.2f}x {key} (EG's DP gap train {eg['dp_train']:.4f})",
                    verdict(ratio >= 20),
                )
            )
    for data in ("anchor", "spambase"):
        sel = [r for r in rows if r["data"] == data and r["threads"] == "1 thread"]
        ours = _get(sel, task="np", method="NeymanPearsonClassifier")
        npc = _get(sel, task="np", method="nproc (logistic)")
        if ours and npc:
            ratio = npc["cpu"] / ours["cpu"]
            targets.append(
                (
                    f"{data}: NeymanPearsonClassifier >= 20x faster than nproc (1 thread)",
                    f"nproc / ours = {ratio:.1f}x CPU (FPR test {ours['fpr_test']:.3f} vs "
                    f"{npc['fpr_test']:.3f})",
                    verdict(ratio >= 20),
                )
            )
    return out


def passes_section(saved, targets):
    from benchmarks.speed.passes import summary

    out = ["## Data passes on the paper's problems (`--parts passes`)", ""]
    out.append(
        f"Run: {_facts(saved)}. `stoc_ialm` with the paper's sigma and minibatch, other "
        "settings at their defaults, seeds 0..k-1; median [min, max] over seeds."
    )
    out.append("")
    out.append(
        "| problem | batch | runs (converged) | all passes (`n_data_passes`) | without stop "
        "tests (`n_passes_without_checks`) | paper's convention | paper |"
    )
    out.append("|---|---:|---|---|---|---|---|")
    for s in summary(saved["rows"]):
        batch = _get(saved["rows"], data=s["data"])["batch_size"]

        def rng(t):
            return f"{t[0]:.2f} [{t[1]:.2f}, {t[2]:.2f}]"

        out.append(
            f"| {s['task']} {s['data']} | {batch} | {s['runs']} ({s['converged']}) | "
            f"{rng(s['n_data_passes'])} | {rng(s['n_passes_without_checks'])} | "
            f"{rng(s['paper_convention'])} | {s['paper']} |"
        )
        limit = PAPER_PASSES[s["data"]]
        med = s["n_data_passes"][0]
        targets.append(
            (
                f"{s['data']}: median passes in all <= {limit} ({PAPER_NOTE[s['data']]})",
                f"{med:.2f} in all; {s['n_passes_without_checks'][0]:.2f} without stop tests",
                verdict(med <= limit),
            )
        )
    out.append("")
    return out


def firstfit_section(saved, targets):
    out = ["## First fit in a fresh process (`--parts firstfit`)", ""]
    out.append(f"Run: {_facts(saved)}. Wall seconds of the fit alone; one thread.")
    out.append("")
    out.append(
        "| numba cache | import s | first fit wall s | first fit CPU s | second fit wall s |"
    )
    out.append("|---|---:|---:|---:|---:|")
    for r in saved["rows"]:
        out.append(
            f"| {r['cache']} | {r['import_s']:.2f} | {r['first_wall']:.2f} | "
            f"{r['first_cpu']:.2f} | {r['second_wall']:.2f} |"
        )
    out.append("")
    cold = saved["rows"][0]
    warm = saved["rows"][1:]
    targets.append(
        (
            "anchor: first fit in a fresh process <= 3 s (cold numba cache)",
            f"{cold['first_wall']:.2f} s (+ import {cold['import_s']:.2f} s)",
            verdict(cold["first_wall"] <= 3),
        )
    )
    if warm:
        w = float(np.median([r["first_wall"] for r in warm]))
        targets.append(
            (
                "anchor: first fit in a fresh process <= 3 s (warm cache)",
                f"{w:.2f} s (median of {len(warm)})",
                verdict(w <= 3),
            )
        )
    return out


def scaling_section(saved, targets):
    from benchmarks.speed.scaling import __doc__ as doc

    rows = [r for r in saved["rows"] if r.get("method") != "(failed)"]
    out = ["## Scaling series (`--parts scaling`)", ""]
    out.append(f"Run: {_facts(saved)}.")
    out.append("")
    out += [line for line in doc.strip().splitlines()[2:]]
    out.append("")
    out.append(
        "| data | n | method | CPU s | data passes | us per row and pass | us per row "
        "| X MB | peak beyond X MB | beyond / X | test acc | acc - LR | DP gap train "
        "| FPR train | budget | warnings |"
    )
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        lr = _get(rows, kind=r["kind"], n=r["n"], method="LogisticRegression")
        out.append(
            f"| {r['kind']} x{r['d']} | {r['n']:.0e} | {r['method']} | {f(r['cpu'])} | "
            f"{f(r['passes'], 4)} | {f(r['us_per_row_pass'])} | {f(r['us_per_row'])} | "
            f"{r['X_MB']:.1f} | {r['beyond_X_MB']:.1f} | {r['beyond_over_X']:.2f} | "
            f"{r['acc_test']:.4f} | {r['acc_test'] - lr['acc_test']:+.4f} | "
            f"{r['dp_train']:.4f} | {r['fpr_train']:.4f} | "
            f"{r['max_passes'] or 'default (300)'} | {r['warnings']} |"
        )
    failed = [r for r in saved["rows"] if r.get("method") == "(failed)"]
    for r in failed:
        out.append(f"\nFailed: {r['kind']} n={r['n']:.0e}: `{r['error'][-300:]}`")
    out.append("")
    for kind in ("dense", "csr"):
        for method in ("FairLogisticClassifier", "NeymanPearsonClassifier"):
            sel = [r for r in rows if r["kind"] == kind and r["method"] == method]
            if not sel:
                continue
            # Issue 21's measure: time per row (the whole fit over n), flat within 2x from
            # 1e5 to 1e7 rows, dense. Time per row and pass and the 1e4 rows are shown beside
            # it; the verdict follows the wording (CSR has no such target there).
            span = [r for r in sel if SCALING_RANGE[0] <= r["n"] <= SCALING_RANGE[1]]
            per = [r["us_per_row"] for r in span]
            ratio = max(per) / min(per)
            per_pass = [r["us_per_row_pass"] for r in span]
            targets.append(
                (
                    f"scaling {kind}, {method}: time per row flat within 2x from "
                    f"{span[0]['n']:.0e} to {span[-1]['n']:.0e} rows"
                    + ("" if kind == "dense" else " (issue 21 asks it of dense data only)"),
                    "us per row: "
                    + ", ".join(f"{r['n']:.0e}: {r['us_per_row']:.3g}" for r in sel)
                    + f"; max/min over {span[0]['n']:.0e} .. {span[-1]['n']:.0e}: "
                    f"{ratio:.2f}. us per row and pass: "
                    + ", ".join(f"{r['n']:.0e}: {r['us_per_row_pass']:.3g}" for r in sel)
                    + f"; max/min over the same range {max(per_pass) / min(per_pass):.2f}",
                    verdict(ratio <= 2) if kind == "dense" else "no target",
                )
            )
            big = [r for r in sel if r["X_MB"] >= 100]  # below, the allocator's noise rules
            if big:
                worst = max(big, key=lambda r: r["beyond_over_X"])
                targets.append(
                    (
                        f"scaling {kind}, {method}: memory beyond X within 0.5x of X "
                        "(cases with X >= 100 MB)",
                        f"worst {worst['beyond_over_X']:.2f}x at n = {worst['n']:.0e} "
                        f"({worst['beyond_X_MB']:.0f} MB beyond {worst['X_MB']:.0f} MB)",
                        verdict(worst["beyond_over_X"] <= 0.5),
                    )
                )
            diffs = []
            for r in sel:
                lr = _get(rows, kind=kind, n=r["n"], method="LogisticRegression")
                diffs.append(r["acc_test"] - lr["acc_test"])
            targets.append(
                (
                    f"scaling {kind}, {method}: test accuracy at LogisticRegression's "
                    "(within 0.01; the constrained model may pay for its bound)",
                    ", ".join(f"{r['n']:.0e}: {d:+.4f}" for r, d in zip(sel, diffs, strict=True)),
                    verdict(min(diffs) >= -0.01),
                )
            )
    return out


def scaling_bounds(saved):
    """For a dense estimator whose time per row is not flat within 2x: where it moves."""
    rows = [r for r in saved["rows"] if r.get("method") != "(failed)"]
    out = []
    for method in ("FairLogisticClassifier", "NeymanPearsonClassifier"):
        span = [
            r
            for r in rows
            if r["kind"] == "dense"
            and r["method"] == method
            and SCALING_RANGE[0] <= r["n"] <= SCALING_RANGE[1]
        ]
        if len(span) < 2:
            continue
        per = [r["us_per_row"] for r in span]
        if max(per) / min(per) <= 2:
            continue
        per_pass = [r["us_per_row_pass"] for r in span]
        lo, hi = span[0], span[-1]
        way = "falls" if hi["us_per_row"] < lo["us_per_row"] else "rises"
        out.append(
            f"- scaling dense, {method}: time per row {way} from {lo['us_per_row']:.3g} us at "
            f"{lo['n']:.0e} rows to {hi['us_per_row']:.3g} us at {hi['n']:.0e} (max/min "
            f"{max(per) / min(per):.2f}), while the time per row and pass stays within "
            f"{max(per_pass) / min(per_pass):.2f}x: the passes a fit needs go "
            + " -> ".join(f"{r['passes']:.2f}" for r in span)
            + " over n = "
            + ", ".join(f"{r['n']:.0e}" for r in span)
            + "."
        )
    return out


def profile_section(saved):
    out = ["## Profile of one anchor fairness fit (`--parts profile`)", ""]
    out.append(
        f"Run: {_facts(saved)}. `FairLogisticClassifier(constraint='demographic_parity', "
        f"bound={BOUND}, random_state=0)` on the anchor, one thread, after a warm-up fit (the "
        "kernel loaded)."
    )
    out.append("")
    for label, p in saved["rows"].items():
        out.append(
            f"### {label}: {p['n_data_passes']:.1f} data passes, {p['solves']} solve(s), "
            f"{p['n_iter']} inner iterations"
        )
        out.append("")
        parts = p.get("parts", {})
        if parts:
            full, block = parts.get("_full_pass", (0.0, 0)), parts.get("_block", (0.0, 0))
            gram, inner = parts.get("_gram_sums", (0.0, 0)), parts.get("pstorm", (0.0, 0))
            tot = p["total_s"]
            each = full[0] / max(full[1], 1) * 1e3
            out.append(
                f"Of {tot:.2f} s profiled: full-data passes (`_full_pass`: stop tests and "
                f"scores) {full[0]:.2f} s in {full[1]} calls ({each:.1f}"
                f" ms each, {100 * full[0] / tot:.0f} %); compiled PStorm blocks {block[0]:.2f} s "
                f"in {block[1]} calls ({100 * block[0] / tot:.0f} %); set-up Gram sweep "
                f"{gram[0]:.2f} s; inner solver `pstorm` (cumulative, checks included) "
                f"{inner[0]:.2f} s ({100 * inner[0] / tot:.0f} %)."
            )
            out.append("")
        for order in ("tottime", "cumulative"):
            out += [f"By {order}:", "", "```", p[order], "```", ""]
    return out


def bounds_lines(saved):
    """What bounds the anchor fairness ratio, from this run's anchor rows and profile."""
    if not (saved["anchor"] and saved["profile"]):
        return []
    rows = [r for r in saved["anchor"]["rows"] if r["threads"] == "1 thread"]
    lr = _get(rows, task="fairness", method="LogisticRegression")
    ours = _get(rows, task="fairness", method="FairLogisticClassifier")
    prof = saved["profile"]["rows"].get("defaults", {})
    parts = prof.get("parts", {})
    if not (lr and ours and parts):
        return []
    full = parts.get("_full_pass", (0.0, 0))
    block = parts.get("_block", (0.0, 0))
    each = full[0] / max(full[1], 1)
    return (
        [
            "## What bounds the targets (figures of the saved parts above, one thread)",
            "",
            f"- The defaults: {ours['cpu']:.2f} s = {ours['cpu'] / lr['cpu']:.1f}x LR "
            f"({ours['work']}).",
            f"- In the profile the full-data passes (`_full_pass`: {full[1]} calls, the "
            f"stop tests and the final scores) take {full[0]:.2f} s, {each * 1e3:.1f} ms each; "
            f"the compiled minibatch blocks {block[0]:.2f} s; LogisticRegression's whole fit "
            f"({lr['work']}) is {lr['cpu']:.3f} s, i.e. {lr['cpu'] / each:.1f} of our full "
            "passes.",
            "- cProfile adds a per-call cost: the profile's shares, not its seconds, are the "
            "evidence.",
        ]
        + _more_bounds(saved)
        + [""]
    )


def _more_bounds(saved):
    """Where the passes go, and what the first fit compiles."""
    out = []
    if saved["passes"]:
        from benchmarks.speed.passes import summary

        for s in summary(saved["passes"]["rows"]):
            checks = s["n_data_passes"][0] - s["n_passes_without_checks"][0]
            out.append(
                f"- {s['data']}: of a median {s['n_data_passes'][0]:.2f} passes in all, about "
                f"{checks:.2f} are stop tests (one full pass each; the paper leaves them out) "
                f"and {s['n_passes_without_checks'][0]:.2f} set-up plus minibatches."
            )
    if saved["firstfit"]:
        r = saved["firstfit"]["rows"][0]
        verdict = (
            "within the 3 s target"
            if r["first_wall"] <= 3.0
            else "the 3 s target needs the steady fit itself faster or less to compile"
        )
        out.append(
            f"- First fit: the steady-state fit alone (second fit in the same process) takes "
            f"{r['second_wall']:.2f} s wall, so compile or cache load adds "
            f"{r['first_wall'] - r['second_wall']:.2f} s cold; {verdict} (the compiled code "
            "is cached on disk, numba's cache=True, so later processes only load it)."
        )
    return out


def binding_section(saved, targets):
    """The binding cases of issue 21: ratios to LogisticRegression, case by case."""
    from benchmarks.speed.binding import MAX_FPR

    rows = saved["rows"]
    out = [
        "## Binding bounds at a million rows and beyond (`--parts binding`)",
        "",
        f"Run: {_facts(saved)}. One thread (`threadpool_limits(1)`), CPU seconds in one "
        "process, LogisticRegression fitted on the same rows in the same run; "
        f'`FairLogisticClassifier(constraint="demographic_parity", bound={BOUND})` and '
        f"`NeymanPearsonClassifier(max_fpr={MAX_FPR})`, `random_state=0`. Recipes: the "
        "docstring of `benchmarks/speed/binding.py` (data from `benchmarks/families.py`). "
        "passes = `n_data_passes_`, of which stop tests = `history_['check_passes']`; "
        "solves = `n_rounds_`; DP gap (fairlearn's, of `predict`) and FPR on the training "
        "rows; accuracy on n / 10 fresh test rows.",
        "",
        "| case | method | CPU s | CPU / LR | passes (stop tests) | budget | solves | converged "
        "| DP gap train | FPR train | test acc |",
        "|---|---|---:|---:|---|---|---:|---|---:|---:|---:|",
    ]
    cases = list(dict.fromkeys(r["case"] for r in rows))
    for case in cases:
        sel = [r for r in rows if r["case"] == case]
        lr = _get(sel, method="LogisticRegression")
        for r in sel:
            work = budget = "-"
            if "passes" in r:
                work = f"{r['passes']:.1f} ({r['check_passes']:.1f})"
                budget = f"{r['max_passes']}" if r.get("max_passes") else "default (300)"
            else:
                work = f"{r['lbfgs_iter']} lbfgs it"
            out.append(
                f"| {case} | {r['method']} | {r['cpu']:.2f} | {r['cpu'] / lr['cpu']:.1f} | "
                f"{work} | {budget} | {r.get('solves', '-')} | {r.get('converged', '-')} | "
                f"{f(r['dp_train'], 4)} | {r['fpr_train']:.4f} | {r['acc_test']:.4f} |"
            )
    out.append("")
    out += [f"- {case}: {_get(rows, case=case)['desc']}." for case in cases]
    out.append("")
    for case in cases:
        sel = [r for r in rows if r["case"] == case]
        lr = _get(sel, method="LogisticRegression")
        for r in sel:
            if "passes" not in r:
                continue
            ratio = r["cpu"] / lr["cpu"]
            cap = f" (budget {r['max_passes']} passes)" if r.get("max_passes") else ""
            if r["task"] == "fairness":
                what = f"DP {BOUND}"
                bound = f"DP gap train {r['dp_train']:.4f}"
                met = r["dp_train"] <= BOUND + 1e-9
            else:
                what = f"max_fpr {MAX_FPR}"
                bound = f"FPR train {r['fpr_train']:.4f}"
                met = r["fpr_train"] <= MAX_FPR + 1e-9
            targets.append(
                (
                    f"{case}: {r['method']} ({what}) <= 2x LogisticRegression, bound met on "
                    "the training predictions, converged",
                    f"{ratio:.2f}x CPU ({r['cpu']:.2f} s vs {lr['cpu']:.2f} s), {bound}, "
                    f"converged {r['converged']}{cap}",
                    verdict(ratio <= 2 and met and r["converged"]),
                )
            )
    return out


def binding_bounds(saved):
    """One line of evidence for each binding fit that misses its target."""
    from benchmarks.speed.binding import MAX_FPR

    out = []
    rows = saved["rows"]
    for r in rows:
        if "passes" not in r:
            continue
        lr = _get(rows, case=r["case"], method="LogisticRegression")
        bound = BOUND if r["task"] == "fairness" else MAX_FPR
        rate = r["dp_train"] if r["task"] == "fairness" else r["fpr_train"]
        ratio = r["cpu"] / lr["cpu"]
        if ratio <= 2 and rate <= bound + 1e-9 and r["converged"]:
            continue
        per_pass = r["cpu"] / r["passes"]
        rest = r["passes"] - r["check_passes"]
        budget = r.get("max_passes") or 300  # the estimators' default max_passes
        end = "converged"
        if not r["converged"]:
            spent = r["passes"] >= budget
            end = f"not converged ({'the budget spent' if spent else 'stopped early'}: {budget})"
        out.append(
            f"- {r['case']}, {r['method']}: {r['cpu']:.2f} s = {ratio:.1f}x LR; "
            f"{r['passes']:.1f} passes = {r['check_passes']:.1f} of stop tests + {rest:.1f} "
            f"of set-up and minibatches, in {r['solves']} solve(s); {per_pass:.3f} s a pass "
            f"against LR's whole fit {lr['cpu']:.2f} s ({lr['lbfgs_iter']} lbfgs it), so 2x "
            f"LR affords {2 * lr['cpu'] / per_pass:.1f} of our passes; {end}"
            + ("" if rate <= bound + 1e-9 else f"; training rate {rate:.4f} over {bound}")
            + f"; test accuracy {r['acc_test']:.4f} (LR {lr['acc_test']:.4f})."
        )
    return out


def np_splits_section(saved, targets):
    """spambase over stratified splits: our test FNR against LR at the same training FPR."""
    from benchmarks.speed.np_splits import __doc__ as doc
    from benchmarks.speed.np_splits import summary

    out = ["## Precision that earns its keep: spambase over splits (`--parts np_splits`)", ""]
    out.append(f"Run: {_facts(saved)}.")
    out.append("")
    out += [line for line in doc.strip().splitlines()[2:]]
    out.append("")
    out.append(
        "| max_fpr | splits | test FNR ours | test FNR LR | ours - LR (se) | wins / ties / "
        "losses | FPR train ours / LR | FPR test ours / LR | CPU / LR median (max) | "
        "passes (stop tests), median | solves, median | converged |"
    )
    out.append("|---:|---:|---:|---:|---|---|---|---|---|---|---:|---:|")
    for s in summary(saved["rows"]):
        out.append(
            f"| {s['max_fpr']} | {s['splits']} | {s['fnr']:.4f} | {s['lr_fnr']:.4f} | "
            f"{s['fnr'] - s['lr_fnr']:+.4f} ({s['se']:.4f}) | {s['wins']} / {s['ties']} / "
            f"{s['losses']} | {s['fpr_train']:.4f} / {s['lr_fpr_train']:.4f} | "
            f"{s['fpr_test']:.4f} / {s['lr_fpr_test']:.4f} | {s['ratio']:.2f} "
            f"({s['ratio_max']:.1f}) | {s['passes']:.1f} ({s['check_passes']:.1f}) | "
            f"{s['solves']:.1f} | {s['converged']}/{s['splits']} |"
        )
        targets.append(
            (
                f"spambase, {s['splits']} splits, max_fpr {s['max_fpr']}: "
                "NeymanPearsonClassifier's test FNR no worse than LogisticRegression "
                "thresholded at the same training FPR",
                f"mean {s['fnr']:.4f} vs {s['lr_fnr']:.4f}; better in {s['wins']}, equal in "
                f"{s['ties']}, worse in {s['losses']} splits",
                verdict(s["fnr"] <= s["lr_fnr"]),
            )
        )
        targets.append(
            (
                f"spambase, max_fpr {s['max_fpr']}: at the speed target (<= 2x "
                "LogisticRegression), converged",
                f"median {s['ratio']:.2f}x CPU ({s['cpu'] * 1e3:.1f} ms vs "
                f"{s['lr_cpu'] * 1e3:.1f} ms), {s['passes']:.1f} passes; converged "
                f"{s['converged']}/{s['splits']}",
                verdict(s["ratio"] <= 2 and s["converged"] == s["splits"]),
            )
        )
    out.append("")
    return out


def np_splits_bounds(saved):
    from benchmarks.speed.np_splits import summary

    out = []
    for s in summary(saved["rows"]):
        if s["fnr"] > s["lr_fnr"]:
            out.append(
                f"- spambase at max_fpr {s['max_fpr']}: test FNR {s['fnr']:.4f} against "
                f"LR's {s['lr_fnr']:.4f} at the same training FPR ({s['fpr_train']:.4f}), "
                f"worse in {s['losses']} of {s['splits']} splits: the ranking of our fit "
                "(median "
                f"{s['passes']:.1f} passes, {s['check_passes']:.1f} of them stop tests, "
                f"{s['solves']:.0f} solve(s)) is worse than LR's at this operating point."
            )
        if s["ratio"] > 2 or s["converged"] < s["splits"]:
            out.append(
                f"- spambase at max_fpr {s['max_fpr']}: median {s['ratio']:.2f}x LR's CPU "
                f"({s['cpu'] * 1e3:.1f} ms vs {s['lr_cpu'] * 1e3:.1f} ms), median "
                f"{s['passes']:.1f} passes of which {s['check_passes']:.1f} stop tests, "
                f"{s['solves']:.0f} solve(s); converged {s['converged']}/{s['splits']}."
            )
    return out


def write():
    """Write speed.md from whatever parts have saved results; return its path."""
    targets = []
    body = []
    names = ("anchor", "passes", "firstfit", "scaling", "profile", "binding", "np_splits")
    saved = {name: load(name) for name in names}
    if saved["anchor"]:
        body += anchor_section(saved["anchor"], targets)
    if saved["passes"]:
        body += passes_section(saved["passes"], targets)
    if saved["firstfit"]:
        body += firstfit_section(saved["firstfit"], targets)
    if saved["scaling"]:
        body += scaling_section(saved["scaling"], targets)
    if saved["profile"]:
        body += profile_section(saved["profile"])
    if saved["binding"]:
        body += binding_section(saved["binding"], targets)
    if saved["np_splits"]:
        body += np_splits_section(saved["np_splits"], targets)
    facts = next((s["facts"] for s in saved.values() if s and "facts" in s), {})
    head = [
        "# Speed as users see it (issue 13)",
        "",
        "Command (from the repository root): `python -m benchmarks.speed` (every part; "
        "`--parts NAME,...` reruns some, `--report-only` rebuilds this file from "
        "`speed_<part>.json`). Generated; do not edit.",
        "",
        f"Machine: {facts.get('cpus')} CPUs ({facts.get('cpu')}), {facts.get('platform')}, "
        f"Python {facts.get('python')}; numpy {facts.get('numpy')}, scipy "
        f"{facts.get('scipy')}, scikit-learn {facts.get('sklearn')}, fairlearn "
        f"{facts.get('fairlearn')}, numba {facts.get('numba')}, nproc {facts.get('nproc')}. "
        "The machine is shared: ratios use CPU time measured in the same process.",
        "",
        "## Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
    ]
    head += [f"| {t} | {m} | {v} |" for t, m, v in targets]
    head.append("")
    lines = bounds_lines(saved)
    more = (scaling_bounds(saved["scaling"]) if saved["scaling"] else []) + (
        binding_bounds(saved["binding"]) if saved["binding"] else []
    )
    more += np_splits_bounds(saved["np_splits"]) if saved["np_splits"] else []
    if more and not lines:
        lines = ["## What bounds the targets (figures of the saved parts above, one thread)", ""]
    if lines and lines[-1] == "":
        lines = lines[:-1]
    head += lines + more + ([""] if lines else [])
    head += [TRIED]
    path = RESULTS / "speed.md"
    path.write_text("\n".join(head + body) + "\n")
    return path
