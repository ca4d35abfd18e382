"""The finding kinds, one module per family. Each check reads a parsed ``Draft`` and a ``Canon``
advanced to the chapter before the draft's, and returns findings (plain dicts, Chinese text for the
author). See docs/continuity.md for each kind."""

from continuity.checks.aliases import check_alias_windows
from continuity.checks.common import ERROR, INFO, KINDS, WARNING, Mentions, finding
from continuity.checks.items import check_items
from continuity.checks.realms import check_realms
from continuity.checks.secrets import _is_name, _secret_known, check_secrets
from continuity.checks.status import check_inactive
from continuity.checks.style import check_style
from continuity.checks.threads import check_front_matter
from continuity.checks.typos import check_typos

BODY_CHECKS = (check_inactive, check_realms, check_items, check_alias_windows, check_typos, check_secrets, check_style)

__all__ = [
    "BODY_CHECKS",
    "ERROR",
    "INFO",
    "KINDS",
    "WARNING",
    "Mentions",
    "_is_name",
    "_secret_known",
    "check_front_matter",
    "finding",
]
