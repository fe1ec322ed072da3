"""ModuleStore's own settings, beside the shared ServiceConfig.

| setting | environment | default |
|---|---|---|
| one store's size limit, every kind | GGMODULES_MODULESTORE_MAX_STORE_BYTES | 2 MiB (2,097,152) |
| one store's size limit, one kind | GGMODULES_MODULESTORE_MAX_STORE_BYTES_<KIND>, e.g. _HISTORY | the above |

A store's size is its text bytes plus 64 bytes per item (core/modules/caps.py); a write that would grow a
store past its limit is refused RESOURCE_EXHAUSTED (CAP_EXCEEDED) and changes nothing. Raising a limit far
enough that an agent's stores no longer fit in one 16 MiB message makes its RenderPrompt (or a GetStore)
refused TOO_LARGE instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.caps import DEFAULT_STORE_BYTES, StoreLimits

PREFIX = "GGMODULES_MODULESTORE_MAX_STORE_BYTES"


def store_limits_from(env: Mapping[str, str] | None = None) -> StoreLimits:
    env = os.environ if env is None else env
    default = _bytes(env, PREFIX, DEFAULT_STORE_BYTES)
    by_kind = {
        kind: _bytes(env, f"{PREFIX}_{kind.name}", default)
        for kind in Kind
        if env.get(f"{PREFIX}_{kind.name}", "").strip()
    }
    return StoreLimits(default, by_kind)


def _bytes(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name, "").strip()
    limit = int(value.replace("_", "").replace(",", "")) if value else default
    if limit < 1:
        raise ValueError(f"{name} must be at least 1 byte, not {limit}")
    return limit
