"""The engine through its one service API: retrieval, capture and reconciliation,
the profile, quotas, erasure, quarantine, keys and the lifecycle. Tests that need a
chat drive it through the real gateway (``tests.gateway_support``)."""
