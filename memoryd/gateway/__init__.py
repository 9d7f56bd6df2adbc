"""The OpenAI-compatible gateway: memory injected into requests, facts extracted from them."""
