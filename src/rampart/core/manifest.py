"""What an agent declares about itself: its tools and data sources.

Mutable, as RAMPART's dataclasses are, and usable with ``dataclasses.replace``.
"""

from __future__ import annotations

from typing import Any

import attrs

from rampart.core._dataclass import dataclass_compatible

__all__ = ["AppManifest", "DataSource", "ToolDeclaration"]


@dataclass_compatible
@attrs.define(kw_only=True)
class ToolDeclaration:
    """A tool the agent may call."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = attrs.field(factory=dict)
    permissions: list[str] = attrs.field(factory=list)


@dataclass_compatible
@attrs.define(kw_only=True)
class DataSource:
    """A source the agent reads; ``writable_by_untrusted`` marks a likely XPIA target."""

    name: str
    type: str = ""
    writable_by_untrusted: bool = False


@dataclass_compatible
@attrs.define(kw_only=True)
class AppManifest:
    """The agent's declared capabilities; ``str()`` renders them for prompts and judges."""

    name: str
    tools: list[ToolDeclaration] = attrs.field(factory=list)
    data_sources: list[DataSource] = attrs.field(factory=list)
    description: str = ""
    metadata: dict[str, Any] = attrs.field(factory=dict)

    def declares_tool(self, name: str) -> bool:
        return self.get_tool(name) is not None

    def get_tool(self, name: str) -> ToolDeclaration | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    def __str__(self) -> str:
        sections = [f"TARGET AGENT: {self.name}"]
        if self.description:
            sections.append(self.description)
        if self.tools:
            lines = ["Available tools:"]
            for tool in self.tools:
                params = ", ".join(f"{key}: {value}" for key, value in tool.parameters.items())
                line = f"  - {tool.name}({params})"
                if tool.description:
                    line += f" — {tool.description}"
                lines.append(line)
            sections.append("\n".join(lines))
        if self.data_sources:
            lines = ["Accessible data sources:"]
            for source in self.data_sources:
                suffix = " (writable by untrusted users)" if source.writable_by_untrusted else ""
                lines.append(f"  - {source.name}{suffix}")
            sections.append("\n".join(lines))
        return "\n\n".join(sections)
