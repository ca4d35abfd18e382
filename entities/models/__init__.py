from entities.models.curation import Extraction, LegacyRecord, PendingItem
from entities.models.entity import Alias, Entity
from entities.models.mention import AmbiguousMention, Appearance, TagApplication
from entities.models.relationship import Relationship, RelationshipEvent
from entities.models.state import StateChange

__all__ = [
    "Alias",
    "AmbiguousMention",
    "Appearance",
    "Entity",
    "Extraction",
    "LegacyRecord",
    "PendingItem",
    "Relationship",
    "RelationshipEvent",
    "StateChange",
    "TagApplication",
]
