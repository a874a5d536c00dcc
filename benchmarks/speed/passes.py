"""Data passes of the solver on the paper's problems, with the package's default settings.

``stoc_ialm`` on the problems of ``benchmarks/paper.py`` (a9a and bank fairness, spambase
Neyman-Pearson) with the paper's sigma and minibatch (10 for spambase, 30 for fairness) and
every other setting at its default, seeds 0..k-1. Three counts per run:

* ``n_data_passes``: every row touched (set-up, minibatches, stop tests);
* ``n_passes_without_checks``: the same without the stop tests (the paper omits them);
* the paper's convention (``benchmarks/paper.py``): each drawn sample once, set by set
  (``b_D/|D| + b_S/|S|`` per draw for NP, half of it for fairness), plus the set-up.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.paper import PAPER, build
from sklearn_ialm.solver import stoc_ialm

PROBLEMS = [("np", "spambase"), ("fairness", "a9a"), ("fairness", "bank")]


def run(log=print, seeds=5, max_passes=300.0):
    """One row per (problem, seed)."""
    rows = []
    for task, dataset in PROBLEMS:
        try:
            make, paper, factor = build(task, dataset)
            pb = make()
        except (OSError, SystemExit) as exc:  # bank needs its data file
            log(f"  {dataset}: skipped ({exc})")
            continue
        for seed in range(seeds):
            c0 = time.process_time()
            r = stoc_ialm(
                pb,
                random_state=seed,
                sigma=paper["sigma"],
                batch_size=paper["batch_size"],
                max_passes=max_passes,
            )
            cpu = time.process_time() - c0
            n_obj, n_con = r.n_draws
            paper_passes = r.n_setup_passes + factor * (
                n_obj / pb.n_objective_samples + n_con / pb.n_constraint_samples
            )
            rows.append(
                dict(
                    task=task,
                    data=dataset,
                    seed=seed,
                    batch_size=paper["batch_size"],
                    converged=bool(r.converged),
                    n_data_passes=float(r.n_data_passes),
                    n_passes_without_checks=float(r.n_passes_without_checks),
                    n_check_passes=float(r.n_check_passes),
                    n_setup_passes=float(r.n_setup_passes),
                    paper_convention=float(paper_passes),
                    paper_figure=PAPER[(task, dataset)]["passes"],
                    cpu=cpu,
                )
            )
            log(
                f"  {dataset} seed {seed}: {r.n_data_passes:.2f} all, "
                f"{r.n_passes_without_checks:.2f} w/o checks, {paper_passes:.2f} paper conv., "
                f"converged {r.converged}"
            )
    return rows


def summary(rows):
    """Median and range of each count per problem."""
    out = []
    for task, dataset in PROBLEMS:
        sel = [r for r in rows if r["data"] == dataset]
        if not sel:
            continue
        entry = dict(task=task, data=dataset, runs=len(sel), paper=sel[0]["paper_figure"])
        entry["converged"] = sum(r["converged"] for r in sel)
        for key in ("n_data_passes", "n_passes_without_checks", "paper_convention"):
            v = np.array([r[key] for r in sel])
            entry[key] = (float(np.median(v)), float(v.min()), float(v.max()))
        out.append(entry)
    return out
