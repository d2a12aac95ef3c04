"""Issue 23: the house's layout rules, checked by reading the source (no import, no app).

- every `*.py` file a comment or docstring of shared/momor names exists (a renamed or removed
  module leaves no pointer to nowhere behind);
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "momor"
SKIP = {".venv", ".sam-venv", "node_modules", ".git"}

EXTERNAL_FILES = {
    # Other projects' files the comments cite as the source of a shape: not Momor's to keep.
    "types/chat/completion_create_params.py", "types/chat/chat_completion.py", "chat_completion_chunk.py",
    "completion_usage.py", "types/responses/response_create_params.py", "easy_input_message_param.py",
    "response_reasoning_item_param.py", "response_function_tool_call_param.py", "response_input_image_param.py",
    "response_input_file_param.py",  # openai-python
    "types.py",  # google-genai
    "bootstrap.py", "/var/runtime/bootstrap.py",  # the AWS Lambda python runtime
}
PY_PATH = re.compile(r"(?<![\w/.-])([\w/.-]*\w\.py)\b")


def _source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _repo_names() -> set[str]:
    return {p.name for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts)}


def _prose(path: Path) -> list[tuple[int, str]]:
    """The comments and string literals (docstrings among them) of one file, with their line."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [(t.start[0], t.string) for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def _exists(named: str, where: Path, names: set[str]) -> bool:
    if "/" not in named:
        return named in names
    bases = [ROOT, PACKAGE, PACKAGE.parent, where.parent, *(d for d in PACKAGE.iterdir() if d.is_dir())]
    return any((base / named.lstrip("/")).exists() for base in bases)


def test_every_python_file_a_comment_names_exists():
    names = _repo_names()
    missing = [f"{path.relative_to(ROOT)}:{line}: {named}"
               for path in _source_files() for line, text in _prose(path)
               for named in PY_PATH.findall(text)
               if named not in EXTERNAL_FILES and not _exists(named, path, names)]
    assert not missing, "comments naming files that do not exist:\n" + "\n".join(missing)
