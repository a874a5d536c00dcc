"""The order of the gallery: the quick start first, then from the estimators to the solver."""

#: Examples listed here come first, in this order; any other example follows, by file name.
GALLERY_ORDER = [
    "plot_quickstart_neyman_pearson.py",
    "plot_fairness_a9a.py",
    "plot_grid_search_fairness.py",
    "plot_compare_logistic_regression.py",
    "plot_custom_problem.py",
]


class GalleryOrder:
    """Sort key for sphinx-gallery's ``within_subsection_order``."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        if filename in GALLERY_ORDER:
            return (0, GALLERY_ORDER.index(filename), filename)
        return (1, 0, filename)
