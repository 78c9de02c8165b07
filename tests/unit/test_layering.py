"""pipeline/ is orchestration and pure cores: importing it (or the CLI, for `apace --help`)
loads no model library; those load in models/, when a model is."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys

MODEL_LIBRARIES = ("llama_cpp", "faster_whisper", "ctranslate2", "onnxruntime", "piper")


def loaded_after(modules: str) -> list[str]:
    code = (f"import sys\nimport {modules}\n"
            f"print(' '.join(m for m in {MODEL_LIBRARIES!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.split()


def _pipeline_modules() -> str:
    import pipeline

    names = [m.name for m in pkgutil.walk_packages(pipeline.__path__, "pipeline.")]
    assert "pipeline.conversation" in names and "pipeline.skills.router" in names
    return ", ".join(names)


def test_the_pipeline_loads_no_model_library() -> None:
    assert loaded_after(_pipeline_modules()) == []


def test_the_cli_loads_no_model_library_until_a_command_needs_one() -> None:
    assert loaded_after("app.cli") == []


def test_ray_loads_only_when_a_cluster_is_joined() -> None:
    code = ("import sys\nimport app.cli, app.cluster.ingress, app.cluster.placement, "
            "app.cluster.run\nprint('ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "False"


def test_one_module_touches_llama_cpp_python_internals_and_chat_templates() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    internal = re.compile(r"\._(input_ids|logits_all|model)\b|\b_internals\b|jinja2|"
                          r"llama\.n_tokens\s*=")
    touching = sorted(str(path.relative_to(root))
                      for folder in ("app", "pipeline", "models")
                      for path in (root / folder).rglob("*.py")
                      if internal.search(path.read_text()))
    assert touching == ["models/llama_internals.py"]
