"""Memory Studio: its routes and login in process here; the real browser tests are
in ``browser/``."""
