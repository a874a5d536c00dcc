"""Data sets shipped with the package (gzip-compressed copies in ``data/``)."""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.utils import Bunch

from .preprocessing import neyman_pearson_preprocess

__all__ = ["load_a9a", "load_spambase"]

_A9A_N_FEATURES = 123
# 0-based column of LIBSVM feature 71, the one-hot level race = "Black" of UCI Adult.
_A9A_SENSITIVE = 70

_A9A_DESCR = """\
.. _a9a_dataset:

a9a (UCI Adult, LIBSVM encoding), fairness split of the Stoc-iALM paper
-----------------------------------------------------------------------

Census income: does a person earn more than 50K USD a year (LIBSVM label +1, here 1)? The
14 Adult attributes are binarised by LIBSVM into 123 sparse 0/1 features (continuous ones
quantised). ``feature_names`` are the 1-based LIBSVM indices ``f1`` ... ``f123``.

The paper's split: D = a9a (32561 rows, 7841 positive), S = a9a.t (16281 rows, 3846
positive) and S_min = the rows of S with LIBSVM feature 71 = 1, which is race = "Black"
(features 67-71 encode race: White, Asian-Pac-Islander, Amer-Indian-Eskimo, Other, Black).
|S_min| = 1561, as in the paper; D holds 3124 such rows. ``sensitive_feature_index`` = 70
is that column, 0-based; ``groups`` and ``groups_test`` are 1 on its rows.

:Source: LIBSVM binary data sets, https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/
:License: CC BY 4.0 (UCI Adult). See data/ATTRIBUTION.md for checksums.

.. rubric:: References

- R. Kohavi. Scaling up the accuracy of naive-Bayes classifiers: a decision-tree hybrid.
  KDD 1996.
- C.-C. Chang and C.-J. Lin. LIBSVM: a library for support vector machines. ACM TIST
  2(3):27, 2011.
- D. Dua and C. Graff. UCI Machine Learning Repository. University of California, Irvine,
  School of Information and Computer Sciences, 2019. http://archive.ics.uci.edu/ml
"""

_SPAMBASE_FEATURES = [
    *(
        f"word_freq_{word}"
        for word in (
            "make", "address", "all", "3d", "our", "over", "remove", "internet", "order",
            "mail", "receive", "will", "people", "report", "addresses", "free", "business",
            "email", "you", "credit", "your", "font", "000", "money", "hp", "hpl", "george",
            "650", "lab", "labs", "telnet", "857", "data", "415", "85", "technology", "1999",
            "parts", "pm", "direct", "cs", "meeting", "original", "project", "re", "edu",
            "table", "conference",
        )
    ),
    *(f"char_freq_{char}" for char in ";([!$#"),
    "capital_run_length_average",
    "capital_run_length_longest",
    "capital_run_length_total",
]  # fmt: skip

_SPAMBASE_DESCR = """\
.. _spambase_dataset:

Spambase (UCI)
--------------

4601 e-mails collected at Hewlett-Packard Labs in 1999, 1813 spam (here 1) and 2788 not
spam (0). The 57 features are the percentages of 48 words and 6 characters in the e-mail
(``word_freq_*``, ``char_freq_*``) and the average, longest and total length of runs of
capital letters.

The Stoc-iALM paper's Neyman-Pearson experiment uses all rows (n+ = 1813, n- = 2788,
d = 57), preprocessed by :func:`sklearn_ialm.datasets.neyman_pearson_preprocess`, which
``load_spambase(preprocess=True)`` applies.

:Source: https://archive.ics.uci.edu/dataset/94/spambase
:License: CC BY 4.0. See data/ATTRIBUTION.md for checksums.

.. rubric:: References

- M. Hopkins, E. Reeber, G. Forman and J. Suermondt. Spambase. UCI Machine Learning
  Repository, 1999.
- D. Dua and C. Graff. UCI Machine Learning Repository. University of California, Irvine,
  School of Information and Computer Sciences, 2019. http://archive.ics.uci.edu/ml
"""


def _data_file(name: str):
    return resources.files(__package__).joinpath("data", name)


def _load_svmlight(name: str) -> tuple[sp.csr_matrix, np.ndarray]:
    with _data_file(name).open("rb") as raw, gzip.open(raw) as f:
        X, y = load_svmlight_file(f, n_features=_A9A_N_FEATURES, dtype=np.float64)
    return X.tocsr(), (y > 0).astype(np.int64)


def load_a9a(*, return_X_y: bool = False) -> Bunch | tuple[sp.csr_matrix, np.ndarray]:
    """Load a9a (UCI Adult, LIBSVM encoding) with the paper's fairness split.

    D is the LIBSVM training file ``a9a``, S the test file ``a9a.t``, and the protected
    group is race = "Black" (LIBSVM feature 71). See ``DESCR`` of the result.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` of the training set D only.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes

        data : scipy.sparse.csr_matrix of shape (32561, 123)
            Training set D (float64, entries 0 or 1).
        target : ndarray of shape (32561,)
            1 for income > 50K (LIBSVM label +1), else 0.
        data_test : scipy.sparse.csr_matrix of shape (16281, 123)
            Constraint set S.
        target_test : ndarray of shape (16281,)
            Labels of S.
        groups, groups_test : ndarray of shape (32561,) and (16281,)
            1 where race = "Black" (column ``sensitive_feature_index``), else 0.
        sensitive_feature_index : int
            70, the 0-based column of LIBSVM feature 71.
        feature_names : list of str
            ``f1`` ... ``f123``, the 1-based LIBSVM indices.
        DESCR : str
            Description of the data set and of the split.

    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from sklearn_ialm.datasets import load_a9a
    >>> a9a = load_a9a()
    >>> a9a.data.shape, a9a.data_test.shape
    ((32561, 123), (16281, 123))
    >>> int(a9a.groups_test.sum())
    1561
    """
    X, y = _load_svmlight("a9a.gz")
    if return_X_y:
        return X, y
    X_test, y_test = _load_svmlight("a9a.t.gz")

    def groups(X: sp.csr_matrix) -> np.ndarray:
        return (X[:, _A9A_SENSITIVE].toarray().ravel() != 0).astype(np.int64)

    return Bunch(
        data=X,
        target=y,
        data_test=X_test,
        target_test=y_test,
        groups=groups(X),
        groups_test=groups(X_test),
        sensitive_feature_index=_A9A_SENSITIVE,
        feature_names=[f"f{j}" for j in range(1, _A9A_N_FEATURES + 1)],
        DESCR=_A9A_DESCR,
    )


def load_spambase(
    *, return_X_y: bool = False, preprocess: bool = False
) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load the UCI Spambase data (bundled).

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    preprocess : bool, default=False
        If True, apply :func:`neyman_pearson_preprocess` (standardise the features, then
        scale the rows to unit norm), as in the paper's Neyman-Pearson experiment.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes

        data : ndarray of shape (4601, 57)
            The features (float64).
        target : ndarray of shape (4601,)
            1 for spam (1813 rows), 0 otherwise (2788 rows).
        feature_names : list of str
            The 57 UCI attribute names, ``word_freq_make`` ... ``capital_run_length_total``.
        DESCR : str
            Description of the data set.

    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from sklearn_ialm.datasets import load_spambase
    >>> X, y = load_spambase(return_X_y=True, preprocess=True)
    >>> X.shape, int(y.sum())
    ((4601, 57), 1813)
    """
    if not isinstance(preprocess, bool):
        raise TypeError(f"preprocess must be True or False, got {preprocess!r}.")
    with _data_file("spambase.data.gz").open("rb") as raw, gzip.open(raw) as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float64)
    X, y = table[:, :-1], table[:, -1].astype(np.int64)
    if preprocess:
        X = neyman_pearson_preprocess(X)
    if return_X_y:
        return X, y
    return Bunch(data=X, target=y, feature_names=list(_SPAMBASE_FEATURES), DESCR=_SPAMBASE_DESCR)


def fetch_a9a(
    *, data_home=None, download_if_missing: bool = True, return_X_y: bool = False
) -> Bunch | tuple[sp.csr_matrix, np.ndarray]:
    """a9a with the signature of the ``fetch_*`` functions: the copy bundled with the package.

    a9a ships inside the package (compressed, checksummed; see ``ATTRIBUTION.md``), so
    nothing is downloaded and ``data_home`` and ``download_if_missing`` have no effect. This
    is :func:`load_a9a` under the name the other data sets use.

    Parameters
    ----------
    data_home : str or path-like, optional
        Unused: a9a is bundled.
    download_if_missing : bool, default=True
        Unused: a9a is bundled.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` of the training set D only.

    Returns
    -------
    Bunch or tuple
        As :func:`load_a9a`.

    Examples
    --------
    >>> from sklearn_ialm.datasets import fetch_a9a
    >>> fetch_a9a().data_test.shape
    (16281, 123)
    """
    return load_a9a(return_X_y=return_X_y)
