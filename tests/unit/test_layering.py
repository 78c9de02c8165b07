"""The floors and rooms (docs/architecture.md). pipeline/ is orchestration and pure cores:
importing it (or the CLI, for `apace --help`) loads no model library; those load in
models/, when a model is. Read from the source: the floors (app → models → pipeline) are
never climbed, pipeline/ does no file, environment or network I/O, no two modules import
each other at import time, the skills know nothing of the conversation, the transports
nothing of each other, the wings (compute, listen, answer, turn) import one way, and the
turn-taking wing reaches the Conversation only through its port."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

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
    root = Path(__file__).resolve().parents[2]
    internal = re.compile(r"\._(input_ids|logits_all|model)\b|\b_internals\b|jinja2|"
                          r"llama\.n_tokens\s*=")
    touching = sorted(str(path.relative_to(root))
                      for folder in ("app", "pipeline", "models")
                      for path in (root / folder).rglob("*.py")
                      if internal.search(path.read_text()))
    assert touching == ["models/llama_internals.py"]


# --- the import graph ---

ROOT = Path(__file__).resolve().parents[2]
FLOORS = ("app", "models", "pipeline")
"""Top to bottom: a module may import its own floor and those below it."""


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(nodes: list[ast.stmt], *, at_import: bool) -> set[str]:
    """The project modules `nodes` import; `at_import`: only those imported when the
    module is (not inside a function, not under TYPE_CHECKING)."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from pipeline import skills` imports the module pipeline.skills
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.If) and at_import and _is_type_checking(node):
            found |= _imported(node.orelse, at_import=True)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and at_import:
            continue
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                found |= _imported(getattr(node, field, []) or [], at_import=at_import)
    return found


def graph(*, at_import: bool) -> dict[str, set[str]]:
    files = {_module(path): path for floor in FLOORS for path in (ROOT / floor).rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        imported = _imported(ast.parse(path.read_text()).body, at_import=at_import)
        edges[name] = {m for m in imported if m in files and m != name}
    return edges


def _floor(module: str) -> int:
    return FLOORS.index(module.split(".")[0])


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in edges.items() for b in targets
                  if _floor(b) < _floor(a))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def crossings(edges: dict[str, set[str]], source: str, target: str) -> list[str]:
    """Imports from the room `source` (a package, or a module) into `target`."""
    def inside(module: str, room: str) -> bool:
        return module == room or module.startswith(room + ".")

    return sorted(f"{a} -> {b}" for a, targets in edges.items() if inside(a, source)
                  for b in targets if inside(b, target))


def test_no_module_imports_a_floor_above_its_own() -> None:
    edges = graph(at_import=False)
    assert "pipeline.turn.talk_over" in edges["pipeline.conversation"]  # (the graph is read)
    assert upward(edges) == []


def test_no_import_cycle_at_import_time() -> None:
    assert cycles(graph(at_import=True)) == []


def test_the_skills_know_nothing_of_the_rest_of_the_pipeline() -> None:
    edges = graph(at_import=False)
    outside = sorted(f"{a} -> {b}" for a, targets in edges.items()
                     if a.startswith("pipeline.skills") for b in targets
                     if not b.startswith("pipeline.skills"))
    assert outside == []


def test_the_transports_know_nothing_of_each_other() -> None:
    edges = graph(at_import=False)
    rooms = ("app.transports.realtime", "app.transports.wyoming", "app.transports.webrtc")
    assert "app.transports.webrtc.session" in edges["app.server"]  # (the rooms are read)
    assert [c for a in rooms for b in rooms if a != b for c in crossings(edges, a, b)] == []


def test_the_turn_taking_wing_uses_the_turn_port_not_the_conversation() -> None:
    edges = graph(at_import=False)
    assert "pipeline.turn.turn_port" in edges["pipeline.turn.talk_over"]
    assert crossings(edges, "pipeline.turn", "pipeline.conversation") == []


WINGS = ("pipeline.compute", "pipeline.listen", "pipeline.answer", "pipeline.turn")
"""The pipeline's wings, each importing only those before it (and the root's cores)."""


def test_the_wings_import_one_way_and_none_imports_the_conversation_or_the_engine() -> None:
    edges = graph(at_import=False)
    backwards = [c for i, wing in enumerate(WINGS) for later in WINGS[i + 1:]
                 for c in crossings(edges, wing, later)]
    assert backwards == []
    assert [c for wing in (*WINGS, "pipeline.room") for room in (
        "pipeline.conversation", "pipeline.engine") for c in crossings(edges, wing, room)] == []
    assert "pipeline.compute.workers" in edges["pipeline.answer.reply"]  # (the graph is read)


def test_compute_knows_nothing_of_a_conversation() -> None:
    edges = graph(at_import=False)
    outside = sorted(c for c in crossings(edges, "pipeline.compute", "pipeline")
                     if not c.split(" -> ")[1].startswith(("pipeline.compute", "pipeline.events",
                                                           "pipeline.timeline")))
    assert outside == []


def test_the_roots_hold_few_modules_and_every_package_says_what_it_owns() -> None:
    assert len(list((ROOT / "app").glob("*.py"))) <= 10
    assert len(list((ROOT / "pipeline").glob("*.py"))) <= 15
    undocumented = sorted(str(init.relative_to(ROOT)) for floor in FLOORS
                          for init in (ROOT / floor).rglob("__init__.py")
                          if not ast.get_docstring(ast.parse(init.read_text())))
    assert undocumented == []
    rooms = [*WINGS, "pipeline.room", "pipeline.skills", "app.transports",
             "app.transports.webrtc", "app.transports.wyoming", "app.transports.realtime",
             "app.observe"]
    silent = [room for room in rooms if "may import" not in ast.get_docstring(ast.parse(
        (ROOT / room.replace(".", "/") / "__init__.py").read_text()), clean=True).lower()]
    assert silent == []


IO_MODULES = ("wave", "sqlite3", "socket", "ssl", "selectors", "urllib", "http", "ftplib",
              "smtplib", "requests", "httpx", "aiohttp", "websockets", "aiofiles", "soundfile",
              "sounddevice", "shutil", "tempfile", "subprocess", "glob", "pathlib",
              "importlib.resources", "importlib.metadata")
"""Modules whose use is file, process or network I/O (or the paths it takes)."""
ENVIRONMENT = ("environ", "environb", "getenv", "putenv", "unsetenv")
FILE_METHODS = ("read_text", "read_bytes", "write_text", "write_bytes")
"""What a `Path` or a package resource (`importlib.resources`) reads or writes with."""


def _io_module(name: str) -> bool:
    return name in {f"os.{env}" for env in ENVIRONMENT} or any(
        name == module or name.startswith(module + ".") for module in IO_MODULES)


def io_uses(source: str) -> list[str]:
    """Where `source` does file, environment or network I/O: an I/O module imported,
    `open()` (or io.open, os.open), the environment read, a file's text or bytes read or
    written. "line: what", in order."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"imports {a.name}") for a in node.names if _io_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if _io_module(node.module) else [
                f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, f"imports {n}") for n in names if _io_module(n)]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.value.id == "os" and node.attr in ENVIRONMENT):
            found.append((node.lineno, f"os.{node.attr}"))
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "open":
                found.append((node.lineno, "open()"))
            elif isinstance(func, ast.Attribute) and (func.attr in FILE_METHODS or (
                    func.attr in ("open", "fdopen") and isinstance(func.value, ast.Name)
                    and func.value.id in ("io", "os", "codecs"))):
                found.append((node.lineno, f".{func.attr}()"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_the_pipeline_does_no_file_environment_or_network_io() -> None:
    """pipeline/ is orchestration and pure cores: files, stores, the environment and the
    network are models/' and app/'s, handed in through a Protocol or a parameter (WAV files:
    models/wav_files.py; the facts skill's data: models/country_data.py)."""
    doing_io = {str(path.relative_to(ROOT)): uses for path in sorted((ROOT / "pipeline").rglob("*.py"))
                if (uses := io_uses(path.read_text()))}
    assert doing_io == {}


def test_the_io_check_catches_each_kind_of_io_and_not_a_method_named_open() -> None:
    source = ("import wave\nimport urllib.request\nfrom importlib import resources\n"
              "from os import getenv\nimport io, os, socket\n"
              "def f(path, gate):\n    gate.open()\n    io.BytesIO(b'')\n"
              "    with open(path) as handle:\n        pass\n    home = os.environ['HOME']\n"
              "    return path.read_text(), io.open(path)\n")
    assert io_uses(source) == [
        "1: imports wave", "2: imports urllib.request", "3: imports importlib.resources",
        "4: imports os.getenv", "5: imports socket", "9: open()", "11: os.environ", "12: .open()",
        "12: .read_text()"]


def test_the_checks_catch_an_upward_import_and_a_cycle() -> None:
    assert upward({"pipeline.a": {"models.b"}, "models.b": {"pipeline.c"}}) == [
        "pipeline.a -> models.b"]
    assert cycles({"pipeline.a": {"pipeline.b"}, "pipeline.b": {"pipeline.c"},
                   "pipeline.c": {"pipeline.a"}, "pipeline.d": {"pipeline.a"}}) == [
        ["pipeline.a", "pipeline.b", "pipeline.c"]]


ADAPTERS = {"app/transports/webrtc/tracks.py", "models/echo_cancel.py",
            "models/llama_internals.py"}
"""Adapters to third-party internals (aiortc, the audio-processing binding, llama-cpp-python):
the only modules allowed a `# noqa: SLF001`."""


def test_no_module_reads_another_objects_private_attributes() -> None:
    """ruff's SLF001 as configured in pyproject.toml: clean, and silenced only in the
    adapters (CI runs pytest, not `make lint`, so it is enforced here)."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "SLF001",
                           "--output-format", "concise", "app", "pipeline", "models"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
    silenced = sorted({str(path.relative_to(ROOT)) for floor in FLOORS
                       for path in (ROOT / floor).rglob("*.py")
                       if "noqa: SLF001" in path.read_text()})
    assert set(silenced) <= ADAPTERS, silenced
