"""Reading and writing files safely: the one reader of JSON/YAML input and the one writer of every output file.

Input is untrusted. The reader caps what a file can cost before any model sees it:

- size: at most `GPUSCHED_MAX_INPUT_BYTES` bytes (default 64 MiB), read in chunks, so /dev/zero or an endless pipe
  stops at the cap;
- time: a pipe or device must deliver its whole input within `GPUSCHED_READ_TIMEOUT` seconds (default 60), so a
  FIFO whose writer holds it open and sends nothing is refused rather than waited on;
- nesting: at most `MAX_DEPTH` levels of lists and mappings, checked on the YAML event stream (or the parsed JSON)
  without recursion, so deep input is exit 2 and never a RecursionError in pydantic;
- YAML aliases: allowed (kubectl and people use anchors), but what they expand to may add at most
  `MAX_ALIAS_NODES` nodes to the document, so a "billion laughs" file is refused instead of expanded.

`-` is standard input (`kubectl get nodes -o json | gpusched import --nodes -`): read once, to its end, within the
size cap, and served again to every later reader of `-` in the same command (a cluster and its pods from one pipe).

The writer first refuses what it could not replace whole (an empty name, a FIFO or device, a folder, a missing
folder, an over-long name), then stages each file in its own folder (temporary name, fsync, rename): a failure
leaves the old file untouched and no temporary file behind, and is one InputError naming the path.
"""

from __future__ import annotations

import json
import os
import select
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from .errors import InputError
from .limits import setting

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "STDIN",
    "check_target",
    "make_folder",
    "max_input_bytes",
    "parse",
    "read_bytes",
    "read_document",
    "read_text",
    "read_timeout",
    "within_depth",
    "write_files",
]

MAX_DEPTH = 64
MAX_ALIAS_NODES = 100_000
DEFAULT_MAX_INPUT_BYTES = 64 << 20
DEFAULT_READ_TIMEOUT = 60.0
_CHUNK = 1 << 20
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def max_input_bytes() -> int:
    """The size cap: GPUSCHED_MAX_INPUT_BYTES when set to a positive whole number, else 64 MiB."""
    return setting("GPUSCHED_MAX_INPUT_BYTES", DEFAULT_MAX_INPUT_BYTES)


def _open(source: str) -> IO[bytes]:
    """Open for reading without blocking: a FIFO that no one writes to then reads as empty, and a pipe or device
    is waited on by `_chunks` with a deadline (a regular file never blocks)."""
    return os.fdopen(os.open(source, os.O_RDONLY | os.O_NONBLOCK), "rb")


def read_timeout() -> float:
    """Seconds a pipe or device may take to deliver a whole input: GPUSCHED_READ_TIMEOUT, else 60. A regular file
    is read without one; a FIFO whose writer never writes nor closes is then an error, not a hang."""
    return setting("GPUSCHED_READ_TIMEOUT", DEFAULT_READ_TIMEOUT)


def _chunks(source: str, handle: IO[bytes], cap: int) -> Iterator[bytes]:
    """The handle's bytes in chunks until its end or just past `cap`; from a pipe or device within read_timeout."""
    size = 0
    give_up = time.monotonic() + read_timeout()
    while size <= cap:
        try:
            chunk = os.read(handle.fileno(), min(_CHUNK, cap + 1 - size))
        except BlockingIOError:  # a pipe whose writer has sent nothing yet
            if not select.select([handle], [], [], max(0.0, give_up - time.monotonic()))[0]:
                raise InputError(source, f"sent no end within {read_timeout():g} s (GPUSCHED_READ_TIMEOUT)") from None
            continue
        if not chunk:
            return
        size += len(chunk)
        yield chunk


STDIN = "-"
_stdin: tuple[Any, bytes] | None = None  # (the stream read, its bytes): `-` is read once per stream


def _read_stdin(cap: int) -> bytes:
    global _stdin
    stream = sys.stdin
    if _stdin is None or _stdin[0] is not stream:
        if stream is None:
            raise InputError(STDIN, "standard input is closed")
        data = getattr(stream, "buffer", stream).read(cap + 1)
        _stdin = (stream, data if isinstance(data, bytes) else data.encode("utf-8"))
    return _stdin[1]


def read_bytes(source: str, missing: str = "no such file") -> bytes:
    """The file's bytes, read in chunks up to the size cap (a device or a pipe too; `-` standard input); InputError
    on any failure."""
    cap = max_input_bytes()
    if source == STDIN:
        data = _read_stdin(cap)
        if len(data) > cap:
            raise InputError(
                STDIN, f"larger than the input limit of {cap} bytes (set GPUSCHED_MAX_INPUT_BYTES to raise it)"
            )
        return data
    try:
        with _open(source) as handle:
            if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
                raise InputError(source, "is a directory, expected a file")
            data = b"".join(_chunks(source, handle, cap))
    except FileNotFoundError:
        raise InputError(source, missing) from None
    except IsADirectoryError:
        raise InputError(source, "is a directory, expected a file") from None
    except OSError as error:
        raise InputError(source, f"cannot read: {error.strerror or error}") from None
    except ValueError:  # a NUL byte in the name
        raise InputError(source.replace("\0", "\\0"), "not a usable file name (it holds a NUL byte)") from None
    if len(data) > cap:
        raise InputError(
            source, f"larger than the input limit of {cap} bytes (set GPUSCHED_MAX_INPUT_BYTES to raise it)"
        )
    return data


def read_text(source: str, missing: str = "no such file") -> str:
    """read_bytes, as UTF-8 text."""
    try:
        return read_bytes(source, missing).decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(source, f"not UTF-8 text (byte {error.start})") from None


def _too_deep(source: str) -> InputError:
    return InputError(source, f"nested deeper than {MAX_DEPTH} levels of lists and mappings")


def within_depth(data: Any) -> bool:
    """Whether parsed JSON nests at most MAX_DEPTH levels, walked with a stack rather than recursion."""
    stack = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                return False
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return True


def _yaml_limits(source: str, text: str) -> None:
    """Walk the YAML events once: refuse nesting deeper than MAX_DEPTH, counting what aliases expand to."""
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, depth) of what it names
    stack: list[list[Any]] = [[0, 0, None]]  # per open collection: nodes so far, deepest child, anchor
    expanded = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) > MAX_DEPTH:
                raise _too_deep(source)
            stack.append([0, 0, event.anchor])
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            nodes, deepest, anchor = stack.pop()
            nodes, depth = nodes + 1, deepest + 1
        elif isinstance(event, yaml.ScalarEvent):
            nodes, depth, anchor = 1, 0, event.anchor
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in sizes:  # undefined, or naming a collection it is inside of: a cycle
                raise InputError(source, f"YAML alias *{event.anchor} names no complete anchor (undefined, or a cycle)")
            nodes, depth = sizes[event.anchor]
            anchor = None
            expanded += nodes
            if expanded > MAX_ALIAS_NODES:
                raise InputError(source, f"YAML aliases expand to more than {MAX_ALIAS_NODES} nodes")
            if len(stack) - 1 + depth > MAX_DEPTH:
                raise _too_deep(source)
        else:
            continue
        if anchor is not None:
            sizes[anchor] = (nodes, depth)
        stack[-1][0] += nodes
        stack[-1][1] = max(stack[-1][1], depth)


def _yaml_error(source: str, error: yaml.YAMLError) -> InputError:
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return InputError(source, f"malformed YAML{where}: {problem}")


def parse(source: str, text: str, documents: bool = False) -> Any:
    """JSON for a .json name (its exact error positions), YAML otherwise; `documents`: the list of every YAML
    document (one for JSON). Over-deep or over-aliased input is an InputError, like malformed input."""
    if source.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(
                source, f"malformed JSON at line {error.lineno} column {error.colno}: {error.msg}"
            ) from None
        except RecursionError:
            raise _too_deep(source) from None
        except ValueError as error:  # e.g. an integer of more digits than Python converts
            raise InputError(source, f"malformed JSON: {error}") from None
        if not within_depth(data):
            raise _too_deep(source)
        return [data] if documents else data
    try:
        _yaml_limits(source, text)
        if documents:
            return list(yaml.load_all(text, Loader=_Loader))
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as error:
        raise _yaml_error(source, error) from None
    except ValueError as error:  # a timestamp or an integer the constructor cannot convert
        raise InputError(source, f"malformed YAML: {error}") from None


def read_document(source: str, missing: str = "no such file", documents: bool = False) -> Any:
    """Read and parse one input file within the limits above. An empty file (or only `null`) is refused here:
    it is never a valid cluster, pod list or object list, and reading it as "nothing" hides a truncated file."""
    data = parse(source, read_text(source, missing), documents)
    if data is None or (documents and all(doc is None for doc in data)):
        raise InputError(source, "empty (or null): expected a JSON or YAML document")
    return data


Content = str | bytes | Callable[[IO[bytes]], None]


def check_target(target: str) -> None:
    """Refuse, before any work, an output the writer could not replace whole: an empty name, a FIFO, socket or
    device (a FIFO blocks until someone reads it; only os.devnull is written through), a folder, a missing or
    non-folder parent, a name longer than the file system takes. Each is an InputError naming the path."""
    if not target.strip():
        raise InputError(repr(target), "expected a file name, got an empty one")
    if "\0" in target:
        raise InputError(target.replace("\0", "\\0"), "not a usable file name (it holds a NUL byte)")
    path = Path(target)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise InputError(target, f"cannot write: {_why(target, error)}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise InputError(target, "is a directory, expected a file")
    if mode is not None and not stat.S_ISREG(mode) and target != os.devnull:
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise InputError(target, f"is {kind}, not a regular file: outputs are written whole to files (- is stdout)")
    folder = path.parent
    if not folder.exists():
        raise InputError(target, f"cannot write: the folder {folder} does not exist")
    if not folder.is_dir():
        raise InputError(target, f"cannot write: {folder} is not a folder")
    longest = _name_max(folder)
    if len(os.fsencode(path.name)) > longest:
        raise InputError(target, f"cannot write: the file name is longer than the {longest} bytes the folder takes")


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _stage(target: str, content: Content) -> str | None:
    """Write `content` to a temporary file beside `target` and fsync it; None for os.devnull (written through)."""
    path = Path(target)
    if target == os.devnull:
        with open(path, "wb") as handle:
            _put(handle, content)
        return None
    # a short temporary name: a target whose name is near the longest allowed still gets one
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            _put(handle, content)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
    except BaseException:
        os.unlink(temporary)
        raise
    return temporary


def _put(handle: IO[bytes], content: Content) -> None:
    if callable(content):
        content(handle)
    else:
        handle.write(content.encode("utf-8") if isinstance(content, str) else content)


def write_files(outputs: Iterable[tuple[str, Content]]) -> None:
    """Write every (path, content) whole or none of them: all are staged before any is renamed into place.

    Content is text, bytes or a function writing to a binary handle. Every target passes check_target first; any
    OSError after that (a read-only folder, a full disk) is an InputError naming the path; nothing is left behind.
    """
    outputs = list(outputs)
    for target, _ in outputs:
        check_target(target)
    staged: list[tuple[str, str]] = []
    target = ""
    try:
        for target, content in outputs:
            temporary = _stage(target, content)
            if temporary is not None:
                staged.append((target, temporary))
        for target, _ in staged:
            if Path(target).is_dir():
                raise IsADirectoryError(21, "Is a directory")
        for target, temporary in staged:
            os.replace(temporary, target)
    except OSError as error:
        raise InputError(target, f"cannot write: {_why(target, error)}") from None
    finally:
        for _, temporary in staged:
            if os.path.exists(temporary):
                os.unlink(temporary)


def _why(target: str, error: OSError) -> str:
    """The reason in a person's terms: which folder is missing or is not a folder, else the system's words."""
    folder = Path(target).parent
    if isinstance(error, FileNotFoundError) and not folder.exists():
        return f"the folder {folder} does not exist"
    if isinstance(error, NotADirectoryError | FileExistsError) and not folder.is_dir():
        return f"{folder} is not a folder"
    return str(error.strerror or error)


def make_folder(folder: Path) -> None:
    """Create an output folder (and its parents); an OSError is an InputError naming it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(str(folder), f"cannot create the folder: {error.strerror or error}") from None
