"""The configuration room: every environment variable declared once, the runtime
settings in the store, upstream providers and the Qdrant settings, read and refused
where a user would set them (REST, CLI, the environment)."""
