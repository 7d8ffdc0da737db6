from __future__ import annotations

from rampart import AppManifest, DataSource, ToolDeclaration


def _manifest() -> AppManifest:
    return AppManifest(
        name="Mail assistant",
        description="Reads and sends email.",
        tools=[
            ToolDeclaration(
                name="send_email",
                description="Send a message",
                parameters={"recipient": "str", "body": "str"},
            ),
            ToolDeclaration(name="search"),
        ],
        data_sources=[
            DataSource(name="inbox", writable_by_untrusted=True),
            DataSource(name="calendar"),
        ],
    )


class TestAppManifest:
    def test_tool_lookup(self) -> None:
        """declares_tool/get_tool find declared tools by exact name."""
        manifest = _manifest()
        assert manifest.declares_tool("search")
        assert not manifest.declares_tool("delete")
        tool = manifest.get_tool("send_email")
        assert tool is not None
        assert tool.description == "Send a message"
        assert manifest.get_tool("nope") is None

    def test_text_rendering(self) -> None:
        """str() renders the sections used in generation and judge prompts."""
        assert str(_manifest()) == (
            "TARGET AGENT: Mail assistant\n\n"
            "Reads and sends email.\n\n"
            "Available tools:\n"
            "  - send_email(recipient: str, body: str) — Send a message\n"
            "  - search()\n\n"
            "Accessible data sources:\n"
            "  - inbox (writable by untrusted users)\n"
            "  - calendar"
        )

    def test_minimal_rendering(self) -> None:
        """A manifest with only a name renders one line."""
        assert str(AppManifest(name="bare")) == "TARGET AGENT: bare"
