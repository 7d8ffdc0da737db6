"""``Payloads.generate_async``: payload variants written by a generator model.

``PayloadGenerator`` (RAMPART's internal class, at RAMPART's module path) makes the
calls. Per variant, one call to the model (all ``count`` calls run concurrently, paced by
the client's limiter):

* system message: the persona's ``system_prompt``;
* user message: ``OBJECTIVE: {objective}`` + ``INSTRUCTION:`` + the resolved
  instruction, then ``str(manifest)`` when given, then ``Output ONLY the generated
  content. No preamble, commentary, or labels.``

Each reply (stripped) becomes a TEXT payload with a new id and metadata
``{template, persona, objective, variant_index}``. With ``converters``, every base
payload is also run through the chain, and the converted payloads follow the base
ones (``2 * count`` in all). When the configuration has a ``seed``, variant *i* is
sent with ``seed + i``: reproducible, yet different variants. Variants are cached
separately (the cache tag is the variant index).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

import anyio

from rampart._checks import check_instance, check_int, check_optional_instance, invalid
from rampart.converters._internal import apply_converters, check_converters
from rampart.core.errors import InfrastructureError
from rampart.core.llm import LLMConfig
from rampart.core.manifest import AppManifest
from rampart.core.persona import Persona
from rampart.core.types import Payload, PayloadFormat
from rampart.engine._internal import raise_unwrapped
from rampart.payloads._template import PayloadTemplate

if TYPE_CHECKING:
    from rampart.core.converter import PayloadConverter
    from rampart.llm import LLMClient

__all__ = ["OUTPUT_ONLY", "PayloadGenerator", "Payloads", "generation_messages"]

_OWNER = "Payloads.generate_async"
_OWNER_GENERATOR = "PayloadGenerator"
OUTPUT_ONLY = "Output ONLY the generated content. No preamble, commentary, or labels."


def _check_llm(owner: str, llm: object) -> LLMConfig | LLMClient:
    from rampart.llm import LLMClient

    if not isinstance(llm, LLMConfig | LLMClient):
        raise invalid(owner, "llm", "an LLMConfig or an LLMClient", llm)
    return llm


def generation_messages(
    *, template: PayloadTemplate, persona: Persona, manifest: AppManifest | None
) -> list[dict[str, str]]:
    """The messages sent for one variant (see the module docstring)."""
    user = PayloadGenerator._build_user_message(template=template, manifest=manifest)
    return [{"role": "system", "content": persona.system_prompt}, {"role": "user", "content": user}]


#: The variant a ``_send_to_llm_async`` call is for (set in each variant's own task).
_VARIANT: ContextVar[int] = ContextVar("rampart_payload_variant", default=0)


class PayloadGenerator:
    """The generator-model calls behind ``Payloads.generate_async``.

    RAMPART's internal class of the same name and module, kept as the seam its tests
    patch: ``_send_to_llm_async(*, system_message, user_message) -> str`` is the one
    call per variant, and ``_build_user_message`` the user message.
    """

    def __init__(self, *, llm: LLMConfig | LLMClient) -> None:
        # Its client is made at the first call (RAMPART's generator is lazy too).
        self._llm = _check_llm(_OWNER_GENERATOR, llm)

    @staticmethod
    def _build_user_message(*, template: PayloadTemplate, manifest: AppManifest | None) -> str:
        user = f"OBJECTIVE: {template.objective}\n\nINSTRUCTION:\n{template.resolve()}"
        if manifest is not None:
            user += f"\n\n{manifest}"
        return f"{user}\n\n{OUTPUT_ONLY}"

    async def generate_text_variants_async(
        self,
        *,
        persona: Persona,
        template: PayloadTemplate,
        manifest: AppManifest | None = None,
        count: int = 10,
    ) -> list[str]:
        """``count`` replies (stripped), one concurrent call per variant, in variant order."""
        count = check_int(_OWNER_GENERATOR, "count", count, minimum=1)
        user = self._build_user_message(template=template, manifest=manifest)
        texts: list[str] = [""] * count

        async def one(index: int) -> None:
            _VARIANT.set(index)  # this task's own context
            reply = await self._send_to_llm_async(
                system_message=persona.system_prompt, user_message=user
            )
            texts[index] = reply.strip()

        try:
            async with anyio.create_task_group() as group:
                for index in range(count):
                    group.start_soon(one, index)
        except BaseExceptionGroup as group:
            raise_unwrapped(group)
        return texts

    async def _send_to_llm_async(self, *, system_message: str, user_message: str) -> str:
        """One call; variant *i* is sent with ``seed + i`` and cached under its index."""
        from rampart.llm import as_client

        client = as_client(self._llm, owner=_OWNER)
        index = _VARIANT.get()
        base_seed = client.config.metadata.get("seed")
        seed = base_seed + index if isinstance(base_seed, int) else None
        messages = [
            {"role": "system", "content": system_message},
            {"role": "user", "content": user_message},
        ]
        completion = await client.complete(messages, seed=seed, tag=f"variant-{index}")
        return completion.text


class Payloads:
    """Payload generation (``generate_async``); see ``docs/payloads.md``."""

    def __init__(self) -> None:
        raise TypeError("Payloads is a namespace: call Payloads.generate_async(...)")

    @staticmethod
    async def generate_async(
        *,
        template: PayloadTemplate,
        llm: LLMConfig | LLMClient,
        persona: Persona,
        manifest: AppManifest | None = None,
        converters: list[PayloadConverter] | None = None,
        count: int = 10,
    ) -> list[Payload]:
        """``count`` variants of ``template`` (plus their converted forms); see the module."""
        _check_llm(_OWNER, llm)
        check_instance(_OWNER, "template", template, PayloadTemplate, expected="a PayloadTemplate")
        check_instance(_OWNER, "persona", persona, Persona, expected="a Persona")
        check_optional_instance(
            _OWNER, "manifest", manifest, AppManifest, expected="an AppManifest"
        )
        count = check_int(_OWNER, "count", count, minimum=1)
        chain = check_converters(_OWNER, converters)
        texts = await PayloadGenerator(llm=llm).generate_text_variants_async(
            persona=persona, template=template, manifest=manifest, count=count
        )
        empty = [index for index, text in enumerate(texts) if not text]
        if empty:
            raise InfrastructureError(
                f"{_OWNER}: the generator model returned an empty reply for "
                f"variant{'s' if len(empty) > 1 else ''} {', '.join(map(str, empty))} of {count}"
            )
        base = [
            Payload(
                content=text,
                format=PayloadFormat.TEXT,
                metadata={
                    "template": template.name,
                    "persona": persona.name,
                    "objective": template.objective,
                    "variant_index": index,
                },
            )
            for index, text in enumerate(texts)
        ]
        if not chain:
            return base
        return base + [await apply_converters(payload, chain) for payload in base]
