"""A user's StealthBench checkout, read as the live corpus needs it.

``DIR/tasks/<task>/`` holds ``challenge/app.py`` (the real app), ``task.yaml`` (the
flag's SHA-256 among other things) and ``docker-compose.yaml`` (which hosts the task
has and the environment each instance runs with). monsearch ships none of it; it
checks that every task it will run is there and that the flag each app will read (the
image's build recipe) is the one the task's hash names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from monsearch.errors import MonsearchError
from monsearch.synth.simapp import task_flag


class CheckoutError(MonsearchError):
    """The folder is not a usable StealthBench checkout."""


@dataclass(frozen=True)
class Task:
    name: str
    app: Path
    flag: str
    #: compose service name -> its environment (the agent's container left out)
    services: dict[str, dict[str, str]] = field(default_factory=dict)

    def env_for(self, host: str) -> dict[str, str]:
        """The environment of the instance the agents reach as ``host`` (``app`` is the
        one instance of a single-app task)."""
        if host in self.services:
            return dict(self.services[host])
        if len(self.services) == 1:
            return dict(next(iter(self.services.values())))
        return {}


def _yaml(path: Path) -> dict:
    try:
        import yaml
    except ImportError as exc:  # the [live] extra
        raise CheckoutError("reading a StealthBench checkout needs PyYAML: pip install 'monsearch[live]'") from exc
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CheckoutError(f"{path}: cannot read it ({exc.__class__.__name__})") from None
    return data if isinstance(data, dict) else {}


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        pairs = (str(e).split("=", 1) for e in env)
        return {k: v for k, v in (p if len(p) == 2 else (p[0], "") for p in pairs)}
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


class Checkout:
    def __init__(self, root: str | Path, tasks: list[str] | None = None) -> None:
        self.root = Path(root).expanduser()
        base = self.root / "tasks"
        if not base.is_dir():
            raise CheckoutError(f"{self.root}: no tasks/ folder (is this a StealthBench checkout?)")
        found = sorted(p.name for p in base.iterdir() if (p / "challenge" / "app.py").is_file())
        if not found:
            raise CheckoutError(f"{base}: no task with a challenge/app.py")
        wanted = tasks or found
        missing = [t for t in wanted if t not in found]
        if missing:
            raise CheckoutError(f"{base}: no app for task(s) {', '.join(missing)}")
        self.tasks: dict[str, Task] = {t: self._read(base / t) for t in wanted}

    def _read(self, folder: Path) -> Task:
        name = folder.name
        flag = task_flag(name)
        spec = _yaml(folder / "task.yaml") if (folder / "task.yaml").is_file() else {}
        want = str((spec.get("verification") or {}).get("hash", ""))
        if want and hashlib.sha256(flag.encode()).hexdigest() != want:
            raise CheckoutError(
                f"{folder / 'task.yaml'}: the flag hash is not the one the StealthBench image "
                "recipe gives (a changed task?): its flag cannot be checked"
            )
        services: dict[str, dict[str, str]] = {}
        compose = folder / "docker-compose.yaml"
        if compose.is_file():
            for sname, svc in (_yaml(compose).get("services") or {}).items():
                if isinstance(svc, dict) and sname != "agent":
                    services[str(sname)] = _environment(svc)
        return Task(name, folder / "challenge" / "app.py", flag, services)

    def task(self, name: str) -> Task:
        try:
            return self.tasks[name]
        except KeyError:
            raise CheckoutError(f"task {name!r} is not in {self.root}") from None
