"""What the `mte` command reads and writes: bounded reads of regular files only, writes
that never wait on a FIFO, and the program, GM windows and UB preloads read from them.
Every failure is a `UsageError` naming the file."""

import fcntl
import os
import stat
import sys

from model.errors import BindingError, ProgramError
from model.isa import DEFAULT_PROFILE
from model.memory import GM_SIZE, GlobalMemory
from model.parser import parse

from .options import UsageError, bindings

# A program file larger than this is refused unread: real kernels are kilobytes.
MAX_PROGRAM_BYTES = 16 << 20


def read_file(path, what, limit, room):
    """The bytes of a regular file of at most `limit` bytes (`room` says where they go).
    A device (/dev/zero), a FIFO, a directory or a larger file is refused unread; the
    open does not wait for a FIFO's writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise UsageError(f"{what} {path} is not a regular file")
        with open(fd, "rb") as f:
            data = _read_at_most(f, limit + 1) if info.st_size <= limit else None
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror}") from None
    if data is None or len(data) > limit:     # a /proc file's size says 0: read to see
        size = info.st_size if data is None else f"more than {limit}"
        raise UsageError(f"{what} {path} holds {size} bytes; {room}")
    return data


def _read_at_most(f, limit):
    """Up to `limit` bytes, in chunks: one read of `limit` would allocate all of it."""
    chunks, total = [], 0
    while total < limit:
        chunk = f.read(min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def write_file(path, data, what):
    """Write `data` to `path`; a FIFO without a reader is refused, not waited for."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o666)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        with open(fd, "wb") as f:
            f.write(data)
    except OSError as e:
        raise UsageError(f"cannot write {what}{path}: {e.strerror}") from None


def write_output(path, data):
    """`data` to the file at `path`, or to stdout for "-"."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    write_file(path, data, "")


def load_program(path, binding_pairs, profile=DEFAULT_PROFILE, skipped=None):
    """The parsed program of the file at `path` under the --bind pairs."""
    data = read_file(path, "program", MAX_PROGRAM_BYTES,
                     f"a program may hold at most {MAX_PROGRAM_BYTES}")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path} is not UTF-8 text: {e.reason}") from None
    try:
        return parse(text, bindings(binding_pairs), profile, strict_bindings=True,
                     skipped=skipped)
    except ProgramError as e:
        raise UsageError(f"{path}:{e.line}:{e.column}: {e.message}") from None
    except BindingError as e:
        where = f"{path}:{e.line}:{e.column}: " if e.line is not None else ""
        raise UsageError(f"{where}--bind {e.name}: {e.message}") from None


def read_gm_windows(windows):
    """The GM of the --gm windows [(addr, path or length)]."""
    gm = GlobalMemory()
    for addr, source in windows:
        data = source if isinstance(source, int) else read_file(
            source, "GM file", GM_SIZE - addr, f"40-bit GM holds {GM_SIZE - addr} from {addr:#x}")
        try:
            gm.map(addr, data)
        except ValueError as e:
            raise UsageError(f"--gm {addr:#x}: {e}") from None
        except MemoryError:
            raise UsageError(f"--gm {addr:#x}:{source}: this machine cannot hold "
                             f"{source} bytes; map only the windows the program uses") from None
    return gm


def read_ub_preloads(preloads, ub_size):
    """The --ub preloads [(addr, path)] as [(addr, bytes)], each within the UB."""
    loaded = []
    for addr, path in preloads:
        room = max(ub_size - addr, 0)
        data = read_file(path, "UB file", room, f"they do not fit the {ub_size}-byte UB, "
                                                f"which holds {room} from {addr:#x}")
        loaded.append((addr, data))
    return loaded
