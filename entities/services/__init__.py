"""The writes of the entities app, in layers that import one way only (import-linter contract in
pyproject.toml)::

    ingest (extraction parse + ingest) · pending (the pending queue) · marks (generic aliases)
        → entities.mentions (the scan)  → entities.tags (the author's tags)  → writes (primitive writes)

Import from the module that holds a service (``entities.services.writes`` …): this package
re-exports nothing, so that importing one layer never drags in the ones above it.
"""
