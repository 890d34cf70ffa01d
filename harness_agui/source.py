"""The Harness's public stream as this library's frozen values: every source
item class, payload, part, delta and content form, and the vocabularies and
limits the model knows (see ``harness_agui.core.source``, where they are
declared). ``harness_agui`` itself exports only the item envelopes."""

from .core.source import *  # noqa: F403
from .core.source import __all__ as __all__  # noqa: PLE0604
