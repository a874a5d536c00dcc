"""The benchmark suite: ``python -m benchmarks list`` names its sections, the commands and
the results files of ``benchmarks/results/`` they write (``benchmarks/__main__.py``)."""
