"""``LLMConfig``, ``Persona`` and payload-id validation: the LLM model types in ``rampart.core``."""

from __future__ import annotations

import pickle

import attrs
import pytest

import rampart
from rampart.core.llm import GENERATION_KEYS, LLMConfig
from rampart.core.payload_ids import validate_payload_id
from rampart.core.persona import Persona

SECRET = "sk-test-PLANTED-0123456789abcdef"


class TestLLMConfig:
    def test_fields_and_defaults(self) -> None:
        """The upstream fields, keyword-only, with RAMPART's defaults."""
        config = LLMConfig(model="gpt-4o-mini", endpoint="https://api.openai.com/v1")
        assert (config.api_key, config.deployment, config.metadata) == (None, None, {})
        with pytest.raises(TypeError):
            LLMConfig("gpt-4o-mini", "https://api.openai.com/v1")  # type: ignore[misc]

    def test_frozen(self) -> None:
        """A configuration is a value: it cannot be changed in place."""
        config = LLMConfig(model="m", endpoint="http://127.0.0.1:1/v1")
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            config.model = "other"  # type: ignore[misc]

    def test_api_key_is_not_in_repr(self) -> None:
        """The key is hidden from repr (and so from tracebacks and logs that print it)."""
        config = LLMConfig(model="m", endpoint="http://127.0.0.1:1/v1", api_key=SECRET)
        assert SECRET not in repr(config)
        assert SECRET not in str(config)
        assert config.api_key == SECRET

    def test_importable_from_the_documented_paths(self) -> None:
        """``rampart.LLMConfig``, ``rampart.core.LLMConfig`` and ``rampart.core.llm``."""
        import rampart.core

        assert rampart.LLMConfig is rampart.core.LLMConfig is LLMConfig
        assert rampart.Persona is rampart.core.Persona is Persona

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"model": "", "endpoint": "http://h/v1"}, "model must be a non-empty string"),
            ({"model": "m", "endpoint": "ftp://h"}, "endpoint must be an http:// or https://"),
            ({"model": "m", "endpoint": "https://u:p@h/v1"}, "endpoint must be a URL without cred"),
            ({"model": "m", "endpoint": "ftp://u:secret@h"}, "endpoint must be a URL without cred"),
            ({"model": "m", "endpoint": " "}, "endpoint must be a non-empty string"),
            ({"model": "m", "endpoint": 3}, "endpoint must be a non-empty string"),
            ({"model": "m", "endpoint": "http://h", "deployment": " "}, "deployment must be"),
            (
                {"model": "m", "endpoint": "http://h", "metadata": {"temperature": 3}},
                "metadata['temperature'] must be a finite number in [0, 2], got 3",
            ),
            (
                {"model": "m", "endpoint": "http://h", "metadata": {"max_tokens": 0}},
                "metadata['max_tokens'] must be >= 1, got 0",
            ),
            (
                {"model": "m", "endpoint": "http://h", "metadata": {"seed": "1"}},
                "metadata['seed'] must be an integer, got '1'",
            ),
            (
                {"model": "m", "endpoint": "http://h", "metadata": {"n": 2}},
                "metadata['n'] must be 1",
            ),
            (
                {"model": "m", "endpoint": "http://h", "metadata": {"api_type": "x"}},
                "metadata['api_type'] must be one of 'azure', 'openai', got 'x'",
            ),
            (
                {"model": "m", "endpoint": "http://h", "metadata": {"is_json_supported": 1}},
                "metadata['is_json_supported'] must be a bool, got 1",
            ),
            (
                {"model": "m", "endpoint": "http://h", "metadata": {"x": {1, 2}}},
                "metadata must be JSON-serialisable",
            ),
            ({"model": "m", "endpoint": "http://h", "metadata": []}, "metadata must be a dict"),
        ],
    )
    def test_bad_values_name_the_field(self, kwargs: dict[str, object], message: str) -> None:
        """Each invalid field is rejected with a message naming it."""
        with pytest.raises((TypeError, ValueError)) as caught:
            LLMConfig(**kwargs)  # type: ignore[arg-type]
        assert str(caught.value).startswith(f"LLMConfig: {message}")

    @pytest.mark.parametrize("bad", [f"{SECRET}\n", "   ", 12345])
    def test_bad_api_key_is_never_echoed(self, bad: object) -> None:
        """A rejected key (which may still be a real secret) is not shown in the error."""
        with pytest.raises((TypeError, ValueError)) as caught:
            LLMConfig(model="m", endpoint="http://h/v1", api_key=bad)  # type: ignore[arg-type]
        assert SECRET not in str(caught.value)
        assert "12345" not in str(caught.value)
        assert "api_key" in str(caught.value)

    def test_rejected_endpoint_hides_query_and_credentials(self) -> None:
        """A bad endpoint's message shows neither its user:password nor its query."""
        for endpoint in ("ftp://user:hunter2@h/v1", "gopher://h/v1?key=hunter2"):
            with pytest.raises(ValueError, match="LLMConfig: endpoint must") as caught:
                LLMConfig(model="m", endpoint=endpoint)
            assert "hunter2" not in str(caught.value)

    def test_only_generation_keys_are_sent(self) -> None:
        """``generation_settings`` keeps the documented keys; the rest are listed as ignored."""
        config = LLMConfig(
            model="m",
            endpoint="http://h/v1",
            metadata={"temperature": 0, "seed": 7, "is_json_supported": False, "tempreture": 1},
        )
        assert config.generation_settings == {"temperature": 0, "seed": 7}
        assert config.ignored_metadata == ["tempreture"]
        assert {"temperature", "seed", "max_tokens", "top_p"} <= GENERATION_KEYS

    def test_pickles(self) -> None:
        """Configurations cross process boundaries (xdist) intact."""
        config = LLMConfig(model="m", endpoint="http://h/v1", metadata={"seed": 1})
        assert pickle.loads(pickle.dumps(config)) == config


class TestPersona:
    def test_defaults_and_mutable(self) -> None:
        """``Persona(name, description="", system_prompt="")``, keyword-only, and mutable
        as RAMPART's dataclass is, with its checks re-run on assignment."""
        persona = Persona(name="red")
        assert (persona.description, persona.system_prompt) == ("", "")
        persona.name = "blue"
        assert persona.name == "blue"
        with pytest.raises(ValueError, match="Persona: name"):
            persona.name = " "
        assert persona.name == "blue"

    def test_validation(self) -> None:
        """A blank name or a non-str prompt is rejected, naming the field."""
        with pytest.raises(ValueError, match="Persona: name"):
            Persona(name=" ")
        with pytest.raises(TypeError, match="Persona: system_prompt"):
            Persona(name="x", system_prompt=None)  # type: ignore[arg-type]


class TestPayloadIds:
    @pytest.mark.parametrize("good", ["a", "exfil-email.v1_2", "A" * 128])
    def test_accepts_safe_names(self, good: str) -> None:
        """Letters, digits, dot, underscore and dash, 1 to 128 characters."""
        assert validate_payload_id(good) == good

    @pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b", "A" * 129, "é", "a b"])
    def test_rejects_unsafe_names(self, bad: str) -> None:
        """Anything that could escape a directory or is not portable is refused."""
        with pytest.raises(
            ValueError, match=r"^validate_payload_id: payload_id must be 1-128 characters from "
        ):
            validate_payload_id(bad)

    def test_type(self) -> None:
        """A non-str id is a TypeError naming the argument."""
        with pytest.raises(
            TypeError, match=r"^Store: collection must be a str of 1-128 .*, got 3$"
        ):
            validate_payload_id(3, owner="Store", name="collection")

    def test_module_path(self) -> None:
        """RAMPART's module path ``rampart.core.payload_ids`` exists."""
        import rampart.core.payload_ids as module

        assert module.validate_payload_id is validate_payload_id
        assert rampart.core.payload_ids is module
