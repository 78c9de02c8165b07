"""The test-side name of app.process (a real `apace serve` child process)."""

from app.process import REPO, ServerProcess, free_port

__all__ = ["REPO", "ServerProcess", "free_port"]
