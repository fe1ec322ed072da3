"""Embedding providers for semantic archive search (`core.modules.archive_semantic.Embedder`), each behind
the `semantic` extra (`pip install ggmodules[semantic]`) and chosen by ModuleStore's SEMANTIC setting."""

from __future__ import annotations

from ggmodules.core.modules.archive_semantic import Embedder

PROVIDERS = ("minilm",)


def load_embedder(name: str) -> Embedder | None:
    """The provider a SEMANTIC setting names; None for "" or "off". A provider whose extra is not
    installed is an error naming the install command, not a silent fallback."""
    if name in ("", "off"):
        return None
    if name == "minilm":
        try:
            from ggmodules.semantic.minilm import MiniLM
        except ImportError as err:
            raise RuntimeError(
                f"SEMANTIC=minilm needs the semantic extra: pip install 'ggmodules[semantic]' ({err})"
            ) from err
        return MiniLM()
    valid = ", ".join(PROVIDERS)
    raise ValueError(f"SEMANTIC={name!r} names no embedding provider; use one of {valid} or off")
