"""Output files written whole or not at all, and never over the command's own inputs.

Every writer of the package goes through :class:`AtomicFile`: the content goes to a temporary file
beside the target, renamed over it (``os.replace``, atomic on POSIX) only once complete. An error,
Ctrl-C or SIGTERM (the command line turns it into Ctrl-C) leaves the old file untouched and no
temporary file behind. Before anything is written the target is checked: its folder must exist and
be writable, and it must not be one of the command's inputs, nor a file already in an input folder
(which the command may read), since the rename would replace it; a new file or folder may go there.
The target must be a new name or a regular file: the rename would replace a device (``-o
/dev/null`` run as root would replace the system's), a FIFO or a symbolic link by a regular file,
so these are refused; to write where a link points, name its target.

A folder a run writes into is locked while it does (:func:`locked_folder`): a second run into it
fails at once instead of mixing its files with the first's. Standard library only, so that the
command line imports it at no cost.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from batsim_google.errors import BatsimGoogleError, OutputFileError, ParameterError

__all__ = [
    "TEMPORARY_PREFIX",
    "AtomicFile",
    "check_output_file",
    "check_output_folder",
    "locked_folder",
    "output_folder",
    "refuse_inputs",
    "save_figure",
    "system_reason",
    "write_text",
]

#: Start of a temporary file's name; the target's name ends it, so that writers which go by the
#: suffix (matplotlib, for one) still see ``.png``.
TEMPORARY_PREFIX = ".partial-"

Inputs = Iterable[str | os.PathLike[str] | None]


def system_reason(error: OSError) -> str:
    """What went wrong, in the system's words ("No space left on device"): polars' OSErrors carry
    only a message, sometimes "[Errno 28] ..."."""
    return error.strerror or re.sub(r"^\[Errno \d+\] ", "", str(error))


def _same_file(first: Path, second: Path) -> bool:
    if first.resolve() == second.resolve():
        return True
    try:
        return os.path.samefile(first, second)  # hard links, bind mounts
    except OSError:  # one of them does not exist
        return False


def refuse_inputs(output: str | os.PathLike[str], inputs: Inputs) -> None:
    """Refuse an output that is one of ``inputs`` (``None`` entries ignored) or an existing file of an
    input folder: writing it would replace what the command reads. A new name in an input folder is
    nothing the command reads, so it is allowed (figures beside the trace, say)."""
    output = Path(output)
    for given in inputs:
        if given is None:
            continue
        source = Path(given)
        if _same_file(output, source):
            raise ParameterError(f"{output}: the output would replace the input {source}; write it elsewhere")
        if source.is_dir() and output.is_file() and output.resolve().is_relative_to(source.resolve()):
            raise ParameterError(
                f"{output}: the output would replace a file of the input folder {source}; write it elsewhere"
            )


def _writable_folder(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


#: What the rename would replace, by file type, other than a regular file.
_NOT_REGULAR = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
}


def _not_regular(path: Path) -> str | None:
    """Why writing ``path`` would replace something other than a regular file, None if it would not."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"cannot be examined ({system_reason(error)})"
    kind = _NOT_REGULAR.get(stat.S_IFMT(mode))
    if kind is None:
        return None
    if stat.S_ISLNK(mode):
        return f"is {kind} (to {os.readlink(path)}), which the output would replace: name its target to write there"
    return f"is {kind}, which the output would replace by a regular file: write to a file"


def check_output_file(path: str | os.PathLike[str], inputs: Inputs = ()) -> Path:
    """``path`` if a file can be written there without replacing an input nor anything but a
    regular file, else a ParameterError naming it. Commands call it first, before any long reading."""
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise ParameterError(f"{path}: is a folder, not a file")
    if not folder.is_dir():
        raise ParameterError(f"{path}: no such folder {folder}")
    if not _writable_folder(folder):
        raise ParameterError(f"{path}: the folder {folder} is not writable")
    refuse_inputs(path, inputs)
    reason = _not_regular(path)
    if reason:
        raise ParameterError(f"{path}: {reason}")
    return path


def check_output_folder(path: str | os.PathLike[str], inputs: Inputs = ()) -> Path:
    """``path`` if it is, or can be created as, a writable folder that is not an input,
    else a ParameterError naming it. Commands call it first; writers then call :func:`output_folder`."""
    path = Path(path)
    existing = next(folder for folder in (path, *path.parents) if folder.exists())
    if not existing.is_dir():
        raise ParameterError(f"{path}: {existing} is a file, not a folder")
    if not _writable_folder(existing):
        raise ParameterError(f"{path}: the folder {existing} is not writable")
    refuse_inputs(path, inputs)
    return path


def output_folder(path: str | os.PathLike[str], inputs: Inputs = ()) -> Path:
    """The output folder ``path``, created with its parents if needed, after the checks of
    :func:`check_output_folder`."""
    path = check_output_folder(path, inputs)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ParameterError(f"{path}: cannot create the folder ({error.strerror})") from None
    return path


#: The lock file of a folder a run is writing (:func:`locked_folder`).
LOCK_FILE = ".batsim-google.lock"
#: Folders this process holds: [nested holds, the lock file's descriptor once locked].
_held: dict[Path, list] = {}


@contextlib.contextmanager
def locked_folder(folder: str | os.PathLike[str], create: bool = True) -> Iterator[Path]:
    """Hold ``folder`` for this process while the block runs: another process asking for it gets,
    at once, a ParameterError naming the folder and the holder's pid. The folder is created first
    unless ``create`` is false: a folder that does not exist yet is then held from the moment a
    nested hold in this process creates it, to the end of the outer block (a command holds the
    folder it writes into without creating it before its inputs are checked). The lock (``flock``
    on :data:`LOCK_FILE`) ends with the process, however it ends."""
    folder = Path(folder)
    if create:
        folder = output_folder(folder)
    key = folder.resolve()
    hold = _held.setdefault(key, [0, None])
    hold[0] += 1
    try:
        if hold[1] is None and folder.is_dir():
            hold[1] = _lock(folder)
        yield folder
    finally:
        hold[0] -= 1
        if not hold[0]:
            del _held[key]
            if hold[1] is not None:
                os.close(hold[1])  # releases the lock


def _lock(folder: Path) -> int:
    """The descriptor of ``folder``'s lock file, locked; a ParameterError if another process holds it."""
    descriptor = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(descriptor)
        raise ParameterError(
            f"{folder}: another run is writing this folder (process {holder}); wait for it to end or choose another"
        ) from None
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
    return descriptor


class AtomicFile:
    """A temporary file beside ``path`` that replaces ``path`` only on success.

    As a context manager it gives the temporary path to write to, renamed into place when the block
    ends normally and removed on any exception (KeyboardInterrupt and SystemExit included); an OSError
    (a full disk) comes out as an :class:`OutputFileError` naming the target. A writer that outlives a
    ``with`` block (a streamed workload) calls :meth:`commit` or :meth:`discard`.
    """

    def __init__(self, path: str | os.PathLike[str], inputs: Inputs = ()) -> None:
        self.path = check_output_file(path, inputs)
        self.temporary = self._create_temporary()

    def _create_temporary(self) -> Path:
        while True:
            candidate = self.path.with_name(f"{TEMPORARY_PREFIX}{os.urandom(4).hex()}-{self.path.name}")
            try:  # mode 0o666 less the umask, as the final file would have had
                os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                continue
            except OSError as error:
                raise ParameterError(f"{self.path}: cannot write in {self.path.parent} ({error.strerror})") from None
            return candidate

    def commit(self) -> None:
        """Put the complete temporary file in place of the target."""
        try:
            os.replace(self.temporary, self.path)
        except BaseException as error:
            self.discard(error)
            raise

    def discard(self, error: BaseException | None = None) -> None:
        """Remove the temporary file; the target stays as it was. The OSError that made the write
        fail, if it is one, is raised again as an OutputFileError naming the target."""
        self.temporary.unlink(missing_ok=True)
        if isinstance(error, OSError) and not isinstance(error, BatsimGoogleError):
            raise OutputFileError(
                f"{self.path}: not written ({system_reason(error)}); an earlier file there is kept"
            ) from error

    def __enter__(self) -> Path:
        return self.temporary

    def __exit__(self, kind, error, trace) -> None:
        if error is None:
            self.commit()
        else:
            self.discard(error)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through an :class:`AtomicFile`."""
    with AtomicFile(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def save_figure(figure, path: str | os.PathLike[str], dpi: int = 110) -> Path:
    """Lay out a matplotlib ``figure``, write it whole to ``path`` (through :class:`AtomicFile`, in
    the format of its suffix) and close it. The caller has imported matplotlib and chosen its backend."""
    import matplotlib.pyplot as plt

    figure.tight_layout()
    with AtomicFile(path) as temporary:
        figure.savefig(temporary, dpi=dpi)
    plt.close(figure)
    return Path(path)
