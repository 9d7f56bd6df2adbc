"""memoryd benchmarks: ``python -m bench`` runs them and writes ``bench/results/``."""
