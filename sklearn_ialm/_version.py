"""The package's version, in a module of its own: the layers read it (a pickled estimator
records it) without importing the package, whose ``__init__`` imports every layer."""

__version__ = "0.1.0.dev0"
