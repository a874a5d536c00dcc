"""Sphinx configuration: pydata theme, numpydoc, sphinx-gallery; builds offline.

Build (from the repository root)::

    python -m sphinx -W --keep-going -b html doc doc/_build/html
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A checkout builds without installing the package; an installed package is found as well.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent / "sphinxext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import sklearn_ialm  # noqa: E402

project = "sklearn-ialm"
author = "The sklearn-ialm developers"
copyright = "The sklearn-ialm developers"  # noqa: A001 - Sphinx's name
release = sklearn_ialm.__version__
version = re.sub(r"\.dev.*$", "", release)

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax served with the site (a packaged copy): formulas render offline.
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    # The user guide's code runs in the build: its outputs, numbers and figures are generated.
    "live_code",
    # Benchmark figures are read from benchmarks/results/ in the build, never typed in.
    "bench_figures",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "_live", "**.ipynb_checkpoints"]
root_doc = "index"
default_role = "literal"
nitpicky = False

# -- API reference ---------------------------------------------------------------------------
autosummary_generate = True
autosummary_ignore_module_all = False
autodoc_typehints = "none"  # the numpydoc "Parameters" sections say it all
autodoc_member_order = "bysource"
# The in-page contents list "fit()", not "FairLogisticClassifier.fit()": short enough for the
# right-hand sidebar at 1280 px.
toc_object_entries_show_parents = "hide"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# Every public class and function documents its parameters and has an Examples section;
# the build fails (-W) on an object that has none. Methods and dataclass fields are
# documented by their class.
numpydoc_validation_checks = {"GL08", "EX01", "PR01", "RT01"}
numpydoc_validation_exclude = {
    r"\.__init__$",
    r"\.[A-Z]\w*\.[a-z_]\w*$",  # methods and attributes of classes
    r"\.[A-Z_]+$",  # constants: documented by their comment
    r"\.(IALMResult|IPCResult)$",  # dataclasses: the fields are the Attributes
}

# -- Gallery ---------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "gallery_order.GalleryOrder",
    "doc_module": ("sklearn_ialm",),
    "reference_url": {"sklearn_ialm": None},  # links to this site only: no network
    "backreferences_dir": "generated/backreferences",
    "download_all_examples": True,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "reset_modules": ("matplotlib",),
    "min_reported_time": 1,
    "show_memory": False,
    "show_signature": False,
    "image_srcset": [],
}

# -- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-ialm {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # The gallery pages get the whole width for code and figures (the patterns must not
    # overlap: a page that matches two of them is a warning).
    "secondary_sidebar_items": {
        "index": ["page-toc"],
        "install": ["page-toc", "sourcelink"],
        "api": ["page-toc", "sourcelink"],
        "user_guide/*": ["page-toc", "sourcelink"],
        "generated/*": ["page-toc", "sourcelink"],
        "auto_examples/*": [],
    },
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": [], "install": []}
html_static_path = ["_static"]
# Room for code at 1280 px; the live-code output set apart (see the file).
html_css_files = ["custom.css"]
html_show_sourcelink = True
html_copy_source = False

# Offline: no intersphinx inventories are fetched.
intersphinx_mapping = {}


# -- Checks ----------------------------------------------------------------------------------
#: Text that would tell where the pages were built: the checkout and the Python installation
#: (a warning printed by an example shows the file that raised it).
_MACHINE_PATHS = (str(ROOT), sys.prefix, "site-packages")


def _no_machine_paths(app, exc):
    """Warn (an error with -W) for every page that shows a path of the building machine."""
    if exc is not None or app.builder.format != "html":
        return
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    for page in sorted(Path(app.outdir).rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        for path in _MACHINE_PATHS:
            if path in text:
                logger.warning("%s shows a path of this machine: %s", page, path)


def setup(app):
    app.connect("build-finished", _no_machine_paths)
