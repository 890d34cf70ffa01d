# The a13n-harness helpers the compat package needs, imported on first use (so
# that the compat modules import, and their Harness-free parts work, where
# a13n-harness is not installed), and the two that the Harness does not export
# publicly, isolated here so a Harness release that moves them breaks one
# import, in one place, with a clear error:
#
# - ``project_json``: the Harness's own JSON projection of a runtime value
#   (a pydantic model or dataclass through its own serializers). Tool results
#   are published in exactly the JSON the Harness gives them, so its function
#   is used rather than a second opinion of it.
# - ``TOOL_CONTENT_METADATA_KEY``: where a lowered ``ToolReturn`` records which
#   item of its content list is the execution value (the rest are model-only
#   supplements).

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

from ..._a13n_release import installed_release

__all__ = ["NEEDS_A13N", "harness", "natives", "project_json", "tool_execution_value"]

NEEDS_A13N = ("harness_agui.compat.a13n_stream_protocol needs a13n-harness 0.20 or 0.21 "
              "(pip install 'harness-agui[a13n]', Python 3.13)")
"""The message of the ImportError raised where a13n-harness is missing."""


def _unimportable(error: ImportError) -> ImportError:
    """The ImportError for a name of a13n-harness (or pydantic-ai) that cannot be imported: the extra to
    install where a13n-harness is missing, else the installed release and the name (installing the extra
    again would not help)."""
    found = installed_release()
    if found is None:
        return ImportError(f"{NEEDS_A13N}: {error}")
    return ImportError(f"harness_agui.compat.a13n_stream_protocol: a13n-harness {found[0]} is installed but a name "
                       f"it reads cannot be imported: {error}")


@functools.cache
def harness() -> SimpleNamespace:
    """a13n-harness's and pydantic-ai's names the compat package uses. Raises
    ImportError naming the extra when a13n-harness is missing."""
    try:
        import pydantic_ai.messages as messages
        from a13n_harness.content import ContentItem, ContentMetadata, project_input_content
        from a13n_harness.tools._output import TOOL_CONTENT_METADATA_KEY

        found = installed_release()
        project: Any = None  # a13n-harness 0.5 has no project_json; its vocabulary does not use one
        if found is None or found[1] != (0, 5):
            from a13n_harness import _json

            project = _json.project_json
    except ImportError as error:
        raise _unimportable(error) from error
    native = (ContentItem, messages.BinaryContent, messages.ImageUrl, messages.AudioUrl, messages.VideoUrl,
              messages.DocumentUrl, messages.UploadedFile, messages.TextContent)
    return SimpleNamespace(
        project_json=project,
        project_input_content=project_input_content,
        ContentMetadata=ContentMetadata,
        tool_content_key=TOOL_CONTENT_METADATA_KEY,
        native_content=native,
    )


def project_json(value: Any) -> Any:
    return harness().project_json(value)


def tool_execution_value(content: Any, metadata: dict[str, Any] | None) -> Any:
    """The execution value of a tool result: for a lowered ``ToolReturn`` the
    item its metadata marks, else the content itself."""
    key = harness().tool_content_key
    if isinstance(metadata, dict) and key in metadata:
        return content[metadata[key]["result_index"]]
    return content


class _Natives:
    """a13n-harness's and pydantic-ai's classes the compat observer and vocabulary read, by name, imported
    on first use (so those modules import, and register, without a13n-harness). Reading one without
    a13n-harness raises ImportError naming the extra."""

    def __getattr__(self, name: str) -> Any:
        try:
            import a13n_harness
            import a13n_harness.events
            import a13n_harness.tools.client
            import pydantic_ai.messages
        except ImportError as error:
            raise _unimportable(error) from error
        for module in (a13n_harness, a13n_harness.events, a13n_harness.tools.client, pydantic_ai.messages):
            if hasattr(module, name):
                value = getattr(module, name)
                setattr(self, name, value)
                return value
        raise AttributeError(name)


natives: Any = _Natives()
"""``natives.TextPart``, ``natives.HarnessEvent``, ...: see ``_Natives``."""
