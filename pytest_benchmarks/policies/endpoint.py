"""Where a policy server listens, and whether it is still alive: what a worker is handed."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


def process_alive(pid: int) -> bool:
    """The process runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here: the signal check decides
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


#: The server's start-up line (``serving.server``): ``policy server: ... loaded in N s``.
STARTED_PREFIX, STARTED_MARK = "policy server: ", ", loaded in "


class PolicyServerError(RuntimeError):
    """The policy server failed a request, or ended; one line."""


@dataclass(frozen=True)
class Endpoint:
    """A running policy server: its ZeroMQ address, process, device and log file."""

    address: str
    pid: int
    device: str
    log: str

    def text(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        return cls(**json.loads(text))

    def alive(self) -> bool:
        return process_alive(self.pid)

    def last_words(self) -> str:
        """The last line the server wrote to its log (its error, when it failed); a server
        whose last line is still its start-up line ended without a word, as a process killed
        from outside does."""
        try:
            lines = [line for line in Path(self.log).read_text().splitlines() if line.strip()]
        except OSError:
            return f"its log {self.log} cannot be read"
        if not lines:
            return f"nothing in its log {self.log}"
        last = lines[-1].strip()
        if last.startswith(STARTED_PREFIX) and STARTED_MARK in last:
            return (
                "it ended without a word, as a process killed from outside does (SIGKILL, the "
                f"out-of-memory killer); the last line of its log {self.log} is its start-up"
            )
        return last

    def ended(self) -> PolicyServerError:
        return PolicyServerError(
            f"the policy server (pid {self.pid}, {self.device}) ended: {self.last_words()}"
        )
