"""The redaction policy (``rampart._redact``): its three rules, its registry, its helpers."""

from __future__ import annotations

import base64
import pickle
import secrets
import threading

import pytest

import rampart
from rampart import _redact
from rampart._redact import (
    MASK,
    REDACTED,
    Masked,
    Secret,
    SecretRegistry,
    is_secret_header,
    is_secret_parameter,
    redact,
    redact_data,
    register_header_secret,
    register_secret,
    register_url_secrets,
)


def _token(prefix: str) -> str:
    """A value no other test (and no ordinary text) contains."""
    return f"{prefix}-{secrets.token_hex(8)}"


class TestUrlUserInfo:
    def test_password_is_masked_user_kept(self) -> None:
        text = "POST http://alice:hunter2@example.test:8080/v1/chat failed"
        assert redact(text) == "POST http://alice:***@example.test:8080/v1/chat failed"

    def test_user_info_without_password_is_a_token(self) -> None:
        assert redact("https://ghp_abcdef@github.example/x") == "https://***@github.example/x"

    def test_password_holding_an_at_sign(self) -> None:
        """The user info runs to the last '@' of the authority."""
        assert redact("redis://u:p@ss@host:6379/0") == "redis://u:***@host:6379/0"

    def test_urls_without_user_info_and_mail_addresses_are_kept(self) -> None:
        text = "see http://example.test/a?b=c and write to eve@evil.example"
        assert redact(text) == text

    def test_every_url_in_a_text(self) -> None:
        text = "a=http://u:one@h1/ b=rediss://:two@h2:1/0"
        assert redact(text) == "a=http://u:***@h1/ b=rediss://:***@h2:1/0"

    def test_idempotent(self) -> None:
        once = redact("http://u:pw@h/")
        assert redact(once) == once


class TestQueryParameters:
    @pytest.mark.parametrize(
        "name",
        [
            "password",
            "passwd",
            "pwd",
            "token",
            "secret",
            "api_key",
            "api-key",
            "API-Key",
            "apikey",
            "key",
            "access_token",
            "sig",
            "client_secret",
            "code",
            "sas_token",
            "X-Amz-Signature",
            "subscription-key",
        ],
    )
    def test_password_like_values_are_masked(self, name: str) -> None:
        assert is_secret_parameter(name)
        text = f"redis://h:6379/0?db=1&{name}=s3cr3t-value&x=2"
        assert redact(text) == f"redis://h:6379/0?db=1&{name}={MASK}&x=2"

    @pytest.mark.parametrize("name", ["db", "api-version", "model", "keyword", "monkey_business"])
    def test_other_parameters_are_kept(self, name: str) -> None:
        assert not is_secret_parameter(name)
        text = f"https://h/v1?{name}=2024-10-21"
        assert redact(text) == text

    def test_value_ends_at_a_quote_or_space(self) -> None:
        assert redact("got 'redis://h/0?password=abc', expected") == (
            f"got 'redis://h/0?password={MASK}', expected"
        )

    def test_first_and_semicolon_separated(self) -> None:
        assert redact("x?token=aaa;sig=bbb") == f"x?token={MASK};sig={MASK}"

    def test_free_text_with_equals_is_kept(self) -> None:
        text = "key = value, token=abc in prose"
        assert redact(text) == text


class TestKnownSecrets:
    def test_registered_value_is_replaced_everywhere(self) -> None:
        secret = _token("sk-known")
        register_secret(secret)
        text = f'Invalid key: Bearer {secret}; {{"echo": "{secret}"}}'
        assert redact(text) == f'Invalid key: Bearer {REDACTED}; {{"echo": "{REDACTED}"}}'

    def test_percent_encoded_forms_too(self) -> None:
        secret = _token("p@ss w/rd")
        register_secret(secret)
        assert secret not in redact(f"raw {secret}")
        encoded = secret.replace("@", "%40").replace(" ", "%20").replace("/", "%2F")
        assert redact(f"got {encoded}") == f"got {REDACTED}"
        assert redact(f"got {encoded.replace('%20', '+')}") == f"got {REDACTED}"

    def test_lower_case_hex_and_quote_default_safe(self) -> None:
        """S3: ``quote()`` keeps ``/`` by default; some servers write lower-case hex."""
        from urllib.parse import quote, quote_plus

        secret = _token("k/ey+with=signs")
        register_secret(secret)
        forms = [
            quote(secret),
            quote(secret, safe=""),
            quote_plus(secret),
            quote_plus(secret, safe=""),
        ]
        forms += [form.lower() for form in forms]  # the token is lower-case: only hex changes
        for form in forms:
            assert redact(f"got {form}.") == f"got {REDACTED}.", form

    def test_mask_secrets_replaces_known_values_only(self) -> None:
        """A model reply loses known secrets and extras, but keeps its URLs as written."""
        from rampart._redact import mask_secrets

        secret = _token("sk-reply")
        register_secret(secret)
        text = f"key {secret} and abc at https://u:pw@host/x?token=t1"
        assert mask_secrets(text, ["abc"]) == (
            f"key {REDACTED} and {REDACTED} at https://u:pw@host/x?token=t1"
        )

    def test_short_values_are_not_registered(self) -> None:
        register_secret("a")
        register_secret("abcde")
        assert redact("a cat sat on abcde") == "a cat sat on abcde"

    def test_short_extra_values_are_replaced_as_whole_words(self) -> None:
        text = "Incorrect API key provided: abc; abcdef is fine"
        assert redact(text, ["abc"]) == f"Incorrect API key provided: {REDACTED}; abcdef is fine"

    def test_long_extra_values_are_replaced_anywhere(self) -> None:
        extra = _token("tok")
        assert redact(f"x{extra}y", [extra, ""]) == f"x{REDACTED}y"

    def test_longest_value_wins(self) -> None:
        short, long = _token("nested"), ""
        long = short + "-and-more"
        register_secret(short)
        register_secret(long)
        assert redact(f"[{long}]") == f"[{REDACTED}]"

    def test_register_secret_rejects_non_strings_without_showing_them(self) -> None:
        with pytest.raises(TypeError) as raised:
            register_secret(123456789)  # type: ignore[arg-type]
        assert str(raised.value) == "register_secret: value must be a str, got <int, not shown>"

    def test_public_names(self) -> None:
        assert rampart.register_secret is register_secret
        assert rampart.redact is redact


class TestDerivedSecrets:
    def test_header_value_and_its_credential(self) -> None:
        token = _token("hdr")
        register_header_secret(f"Bearer {token}")
        assert redact(f"you sent {token}") == f"you sent {REDACTED}"

    def test_basic_header_registers_its_password(self) -> None:
        password = _token("basic-pw")
        pair = base64.b64encode(f"bob:{password}".encode()).decode()
        register_header_secret(f"Basic {pair}")
        assert redact(f"pw {password}, pair {pair}") == f"pw {REDACTED}, pair {REDACTED}"

    def test_url_password_and_the_basic_pair_clients_derive(self) -> None:
        password = _token("url-pw")
        register_url_secrets(f"http://carol:{password}@h/v1")
        pair = base64.b64encode(f"carol:{password}".encode()).decode()
        assert redact(f"echo {password} / Basic {pair}") == f"echo {REDACTED} / Basic {REDACTED}"

    def test_url_token_user_and_query_password(self) -> None:
        user, query = _token("tokuser"), _token("qpw")
        register_url_secrets(f"https://{user}@h/x")
        register_url_secrets(f"redis://h:1/0?password={query}&db=2")
        assert redact(f"{user} {query}") == f"{REDACTED} {REDACTED}"

    def test_default_and_marked_secret_headers(self) -> None:
        for name in ("Authorization", "api-key", "X-API-Key", "Proxy-Authorization"):
            assert is_secret_header(name)
        assert not is_secret_header("X-Tenant")
        assert is_secret_header("x-tenant", ["X-Tenant"])


class TestRegistry:
    def test_bounded_oldest_forgotten_first(self) -> None:
        registry = SecretRegistry(limit=3)
        for value in ("first-value", "second-value", "third-value"):
            registry.add(value)
        registry.add("first-value")  # re-registering refreshes it
        registry.add("fourth-value")
        assert len(registry) == 3
        text = "first-value second-value fourth-value"
        assert registry.replace(text) == f"{REDACTED} second-value {REDACTED}"
        assert registry.found_in("a fourth-value")
        assert not registry.found_in("second-value")

    def test_never_serialized(self) -> None:
        with pytest.raises(TypeError, match="never serialized"):
            pickle.dumps(_redact._REGISTRY)
        assert "not shown" in repr(_redact._REGISTRY)

    def test_thread_safe(self) -> None:
        registry = SecretRegistry()
        values = [f"thread-value-{index:04d}" for index in range(400)]

        def add(chunk: list[str]) -> None:
            for value in chunk:
                registry.add(value)

        threads = [threading.Thread(target=add, args=(values[i::8],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(registry) == len(values)
        assert set(registry.replace(" ".join(values)).split()) == {REDACTED}

    def test_clear(self) -> None:
        registry = SecretRegistry()
        registry.add("some-value")
        registry.clear()
        assert registry.replace("some-value") == "some-value"
        assert len(registry) == 0


class TestHelpers:
    def test_redact_data_walks_values_and_keys(self) -> None:
        secret = _token("data")
        register_secret(secret)
        data = {
            "backend": "redis://u:pw@h/0",
            secret: [f"x {secret}", 3, None, True, ("t", secret)],
            "n": 1.5,
        }
        assert redact_data(data) == {
            "backend": "redis://u:***@h/0",
            REDACTED: [f"x {REDACTED}", 3, None, True, ("t", REDACTED)],
            "n": 1.5,
        }
        assert data["backend"] == "redis://u:pw@h/0"  # not changed in place

    def test_secret_and_masked_reprs(self) -> None:
        secret = Secret("sk-hidden-value")
        assert secret == "sk-hidden-value"
        assert "hidden" not in repr(secret)
        masked = Masked("redis://u:pw@h/0?password=x")
        assert masked == "redis://u:pw@h/0?password=x"
        assert repr(masked) == repr(f"redis://u:***@h/0?password={MASK}")

    def test_redact_rejects_non_text(self) -> None:
        with pytest.raises(TypeError, match=r"^redact: text must be a str, got 3$"):
            redact(3)  # type: ignore[arg-type]


class TestSafeSummary:
    """One function makes every summary rampart writes: terminal-safe, then redacted."""

    def test_escapes_invisible_characters_and_secrets_go(self) -> None:
        secret = _token("sk-summary")
        register_secret(secret)
        text = f"\x1b[31mred\x1b[0m key {secret}\u202e!"
        assert _redact.safe_summary(text) == f"red key {REDACTED}!"

    @pytest.mark.anyio
    async def test_the_error_boundary_uses_it(self) -> None:
        """An ERROR summary made from an exception is cleaned as a strategy's verdict
        summary is (before, the boundary only redacted: an escape reached the summary)."""
        from rampart.core.errors import InfrastructureError
        from rampart.core.execution import BaseExecution
        from rampart.testing import ScriptedAgent

        secret = _token("sk-boundary")
        register_secret(secret)

        class Failing(BaseExecution):
            strategy_name = "failing"

            async def _execute_async(self, *, adapter: object) -> rampart.Result:
                raise InfrastructureError(f"\x1b[2J{secret} down\u200b")

        error = await Failing().execute_async(adapter=ScriptedAgent(["x"]))
        assert error.summary == f"InfrastructureError: {REDACTED} down"
        assert error.metadata["error"] == f"\x1b[2J{REDACTED} down\u200b"  # data, kept
