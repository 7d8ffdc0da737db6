"""``Payloads.generate_async``: payload variants written by a generator model.

Per variant, one call to the model (all ``count`` calls run concurrently, paced by
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

from typing import TYPE_CHECKING

import anyio

from rampart._checks import check_instance, check_int, check_optional_instance
from rampart.converters._chain import apply_converters, check_converters
from rampart.core.errors import InfrastructureError
from rampart.core.manifest import AppManifest
from rampart.core.persona import Persona
from rampart.core.types import Payload, PayloadFormat
from rampart.engine._exceptions import raise_unwrapped
from rampart.payloads._template import PayloadTemplate

if TYPE_CHECKING:
    from rampart.core.converter import PayloadConverter
    from rampart.core.llm import LLMConfig
    from rampart.llm import LLMClient

__all__ = ["OUTPUT_ONLY", "Payloads", "generation_messages"]

_OWNER = "Payloads.generate_async"
OUTPUT_ONLY = "Output ONLY the generated content. No preamble, commentary, or labels."


def generation_messages(
    *, template: PayloadTemplate, persona: Persona, manifest: AppManifest | None
) -> list[dict[str, str]]:
    """The messages sent for one variant (see the module docstring)."""
    user = f"OBJECTIVE: {template.objective}\n\nINSTRUCTION:\n{template.resolve()}"
    if manifest is not None:
        user += f"\n\n{manifest}"
    user += f"\n\n{OUTPUT_ONLY}"
    return [{"role": "system", "content": persona.system_prompt}, {"role": "user", "content": user}]


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
        from rampart.llm import as_client

        check_instance(_OWNER, "template", template, PayloadTemplate, expected="a PayloadTemplate")
        check_instance(_OWNER, "persona", persona, Persona, expected="a Persona")
        check_optional_instance(
            _OWNER, "manifest", manifest, AppManifest, expected="an AppManifest"
        )
        count = check_int(_OWNER, "count", count, minimum=1)
        chain = check_converters(_OWNER, converters)
        client = as_client(llm, owner=_OWNER)
        messages = generation_messages(template=template, persona=persona, manifest=manifest)
        base_seed = client.config.metadata.get("seed")
        texts: list[str] = [""] * count

        async def one(index: int) -> None:
            seed = base_seed + index if isinstance(base_seed, int) else None
            completion = await client.complete(messages, seed=seed, tag=f"variant-{index}")
            texts[index] = completion.text.strip()

        try:
            async with anyio.create_task_group() as group:
                for index in range(count):
                    group.start_soon(one, index)
        except BaseExceptionGroup as group:
            raise_unwrapped(group)
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
