"""Embedding sources for real: the packaged MiniLM on ONNX Runtime, static models,
remote providers behind a loopback fake, the cache and the coalescing of queries."""
