"""The benchmarks' own checks: each stage runs in a short form, and the tables in
the docs match the JSON in ``bench/results``."""
