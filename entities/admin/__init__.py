"""Admin of the entities app: entities with aliases, state history and relationships inline; the
pending queue (lowest confidence first) with confirm / confirm-as / reject; merge. Every write of a
curation action goes through ``entities.services`` and reports counts with ``message_user``.

One module per group of pages; importing them registers their ModelAdmins."""

from entities.admin import entity, history, pending, records  # noqa: F401 (registers the ModelAdmins)
