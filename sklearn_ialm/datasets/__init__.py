"""The data sets of the Stoc-iALM paper's experiments.

``load_*`` read copies bundled with the package; ``fetch_*`` download from the UCI
repository on first use, verify and cache under :func:`sklearn.datasets.get_data_home`, and
read a local copy when one is there, so they also work offline.
"""

from ._bank import fetch_bank_marketing
from ._bundled import fetch_a9a, load_a9a, load_spambase
from ._nips2003 import fetch_gisette, fetch_madelon
from .preprocessing import neyman_pearson_preprocess

__all__ = [
    "fetch_a9a",
    "fetch_bank_marketing",
    "fetch_gisette",
    "fetch_madelon",
    "load_a9a",
    "load_spambase",
    "neyman_pearson_preprocess",
]
