"""The CUDA libraries of the GPU environment (`make gpu`), loaded before either engine.

NVIDIA's wheels put CUDA 13's cudart and cuBLAS (for llama.cpp) under
site-packages/nvidia/cu13/lib, and CUDA 12's cuBLAS and cuDNN (for CTranslate2, which opens
libcublas.so.12 by name) under nvidia/cublas/lib and nvidia/cudnn/lib: none is on the
loader's path. Loading each once with RTLD_GLOBAL lets the engines' own lookups by name find
them, without LD_LIBRARY_PATH (which only counts when set before the process starts). A
CPU environment has none of these folders: then this does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import sys
from pathlib import Path

log = logging.getLogger(__name__)

FOLDERS = ("nvidia/cu13/lib", "nvidia/cublas/lib", "nvidia/cudnn/lib")
# Dependencies first: cuBLAS needs cuBLASLt, cuDNN's parts need libcudnn_graph.
ORDER = ("libcudart", "libcublasLt", "libcublas", "libcudnn_graph", "libcudnn")


def folders(paths: list[str] | None = None) -> list[Path]:
    """The CUDA library folders under any site-packages on `paths` (sys.path)."""
    return [Path(root) / sub for root in (paths if paths is not None else sys.path)
            for sub in FOLDERS if (Path(root) / sub).is_dir()]


def _rank(path: Path) -> int:
    stem = path.name.split(".so")[0]
    return next((n for n, name in enumerate(ORDER) if stem == name), len(ORDER))


@functools.lru_cache(maxsize=1)
def preload() -> tuple[str, ...]:
    """Load every CUDA library found (once); returns the names loaded."""
    pending = sorted((path for folder in folders() for path in folder.glob("lib*.so.*[0-9]")),
                     key=lambda p: (_rank(p), p.name))
    loaded: list[str] = []
    while pending:  # a library whose dependency is later in the list is tried again after
        failed = []
        for path in pending:
            try:
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            except OSError as error:  # e.g. one that needs the driver, on a box without one
                log.debug("not preloaded yet: %s (%s)", path.name, error)
                failed.append(path)
            else:
                loaded.append(path.name)
        if len(failed) == len(pending):
            break
        pending = failed
    return tuple(loaded)
