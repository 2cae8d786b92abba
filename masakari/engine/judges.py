"""A judgement of a VM report made before its instance is restarted, by a package the engine
does not import (quarantine's storage signal, masakari.signals, wired by masakari-engine);
the judge's type is RunContext's ``judge_instance``."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Judged:
    """What the judgement says: the notification's message, and whether the instance is left
    to another recovery (not restarted in place)."""

    message: str
    takes_instance: bool
