"""What an import produced: the trajectories, and every file it had to skip and why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from monsearch.corpora.errors import InputError
from monsearch.corpora.model import Trajectory


@dataclass(frozen=True, slots=True)
class Skipped:
    """One file (or JSONL record, ``file:line``) left out of an import."""

    path: str
    reason: str  # the InputError message: file, JSON path, expected, got


@dataclass(slots=True)
class ImportReport:
    """The result of reading one source.

    ``files_read`` counts the trajectory files examined, skipped ones included
    (side files such as verdicts are not counted). ``warnings`` are problems
    that did not cost a trajectory (orphan verdicts, counts that disagree).
    """

    trajectories: list[Trajectory] = field(default_factory=list)
    files_read: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def labelled(self) -> int:
        return sum(1 for t in self.trajectories if t.is_labelled)


#: Called after each trajectory file with (files done, files in all).
FileProgress = Callable[[int, int], None]


class ReportBuilder:
    """Collects trajectories and skips; in strict mode the first skip raises."""

    def __init__(self, *, strict: bool, progress: FileProgress | None = None) -> None:
        self.strict = strict
        self.report = ImportReport()
        self._progress = progress
        self._seen: dict[str, str] = {}  # trajectory id -> where it was first read

    def file_done(self, total: int) -> None:
        """Count one more trajectory file examined (and report progress)."""
        self.report.files_read += 1
        if self._progress is not None:
            self._progress(self.report.files_read, total)

    def skip(self, err: InputError) -> None:
        if self.strict:
            raise err
        self.report.skipped.append(Skipped(err.location, err.message))

    def warn(self, message: str) -> None:
        self.report.warnings.append(message)

    def add(self, traj: Trajectory, *, where: str, id_field: str, line: int | None = None) -> None:
        """Keep ``traj`` unless its id was already read; the later copy is skipped."""
        first = self._seen.get(traj.id)
        if first is not None:
            self.skip(
                InputError(
                    where,
                    id_field,
                    "a trajectory id not read before",
                    f'"{traj.id}", already read from {first}',
                    line=line,
                )
            )
            return
        self._seen[traj.id] = where if line is None else f"{where}:{line}"
        self.report.trajectories.append(traj)
