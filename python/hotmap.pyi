# SPDX-License-Identifier: MIT
# Type stub of the hotmap extension module (python/*.c, which
# python/hotmap_priv.h lists).
# See docs/python.md.
import builtins
import os
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple, Union, final

from _typeshed import WriteableBuffer as _Buffer  # bytearray, memoryview, numpy arrays, ...

__version__: str

O_MMAP: int
O_PREAD: int
O_PATH: int
O_WARM: int
O_DIRECT: int
BACKEND_MMAP: int
BACKEND_PREAD: int
DIRECT_NO: int
DIRECT_GRANTED: int
DIRECT_YES: int

class Error(OSError): ...
class FileNotFoundError(Error, builtins.FileNotFoundError): ...
class PermissionError(Error, builtins.PermissionError): ...
class FileExistsError(Error, builtins.FileExistsError): ...
class IsADirectoryError(Error, builtins.IsADirectoryError): ...
class NotADirectoryError(Error, builtins.NotADirectoryError): ...
class InterruptedError(Error, builtins.InterruptedError): ...
class BlockingIOError(Error, builtins.BlockingIOError): ...
class ConnectionRefusedError(Error, builtins.ConnectionRefusedError): ...
class ConnectionResetError(Error, builtins.ConnectionResetError): ...
class ConnectionAbortedError(Error, builtins.ConnectionAbortedError): ...
class BrokenPipeError(Error, builtins.BrokenPipeError): ...
class TimeoutError(Error, builtins.TimeoutError): ...

class _HasFileno(Protocol):
    def fileno(self) -> int: ...

_Path = Union[str, bytes, os.PathLike]
_Request = Tuple["File", int, int]
_IntoRequest = Union[Tuple["File", int, int], Tuple["File", int, int, int]]

@final
class StatResult(Tuple[Any, ...]):
    n_fields: int
    n_sequence_fields: int
    n_unnamed_fields: int
    __match_args__ = ("size", "backend", "reason", "reason_text", "dev", "ino", "mtime_ns",
                      "mode", "handles", "mapped_length", "direct", "direct_text")
    size: int
    backend: int
    reason: int
    reason_text: str
    dev: int
    ino: int
    mtime_ns: int
    mode: int
    handles: int
    mapped_length: int
    direct: int
    direct_text: str

@final
class ReadStats(Tuple[int, ...]):
    n_fields: int
    n_sequence_fields: int
    n_unnamed_fields: int
    __match_args__ = ("daemon_reads", "pread_reads", "copy_reads", "touch_reads", "view_reads",
                      "probes", "populates", "populate_ns", "forgets", "copy_ns", "pread_ns",
                      "touch_ns", "block_ns", "touch_after", "populate_after", "direct")
    daemon_reads: int
    pread_reads: int
    copy_reads: int
    touch_reads: int
    view_reads: int
    probes: int
    populates: int
    populate_ns: int
    forgets: int
    copy_ns: int
    pread_ns: int
    touch_ns: int
    block_ns: int
    touch_after: int
    populate_after: int
    direct: int

@final
class FileInfo(Tuple[Any, ...]):
    n_fields: int
    n_sequence_fields: int
    n_unnamed_fields: int
    __match_args__ = ("path", "size", "backend", "reason", "handles", "stale", "hits", "bytes",
                      "idle_ms", "resident_pct", "resident_bytes", "direct_handles",
                      "direct_reads", "direct_bytes", "dev", "ino", "daemon_reads",
                      "copy_reads", "pread_reads", "probes", "populated_blocks",
                      "populate_ns", "private_entry", "network", "fs")
    path: str
    size: int
    backend: int
    reason: int
    handles: int
    stale: bool
    hits: int
    bytes: int
    idle_ms: int
    resident_pct: Optional[int]
    resident_bytes: int
    direct_handles: int
    direct_reads: int
    direct_bytes: int
    dev: int
    ino: int
    daemon_reads: int
    copy_reads: int
    pread_reads: int
    probes: int
    populated_blocks: int
    populate_ns: int
    private_entry: bool
    network: bool
    fs: str

@final
class ClientInfo(Tuple[Any, ...]):
    n_fields: int
    n_sequence_fields: int
    n_unnamed_fields: int
    __match_args__ = ("pid", "uid", "name", "handles", "direct_grants", "direct_reads",
                      "direct_bytes", "bytes_served", "polling", "region_huge", "connected_ms",
                      "daemon_reads", "copy_reads", "pread_reads", "probes", "populated_blocks",
                      "populate_ns")
    pid: int
    uid: int
    name: str
    handles: int
    direct_grants: int
    direct_reads: int
    direct_bytes: int
    bytes_served: int
    polling: bool
    region_huge: bool
    connected_ms: int
    daemon_reads: int
    copy_reads: int
    pread_reads: int
    probes: int
    populated_blocks: int
    populate_ns: int

@final
class View:
    """A read-only range of a file, exported through the buffer protocol."""
    @property
    def released(self) -> bool: ...
    def release(self) -> None: ...
    def check(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> "View": ...
    def __exit__(self, *exc: object) -> None: ...

@final
class File:
    """A file open through hotmapd; reads by offset."""
    @property
    def name(self) -> Union[str, bytes, int, _HasFileno]: ...
    @property
    def flags(self) -> int: ...
    @property
    def client(self) -> "Client": ...
    @property
    def closed(self) -> bool: ...
    def pread(self, n: int, offset: int, /) -> bytes: ...
    def readinto(self, buffer: _Buffer, offset: int, /) -> int: ...
    def view(self, offset: int, length: int, /) -> View: ...
    def stat(self) -> StatResult: ...
    def read_stats(self) -> ReadStats: ...
    def warm(self, offset: int = 0, length: Optional[int] = None) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> "File": ...
    def __exit__(self, *exc: object) -> None: ...

@final
class Client:
    """A connection to hotmapd."""
    @property
    def socket(self) -> Optional[_Path]: ...
    @property
    def closed(self) -> bool: ...
    def open(self, file: Union[_Path, int, _HasFileno], flags: int = 0) -> File: ...
    def read_batch(self, requests: Sequence[_Request], /) -> List[bytes]: ...
    def read_batch_into(self, requests: Sequence[_IntoRequest], buffer: _Buffer, /) -> List[int]: ...
    def view_batch(self, requests: Sequence[_Request], /) -> List[View]: ...
    def files(self) -> List[FileInfo]: ...
    def clients(self) -> List[ClientInfo]: ...
    def ping(self) -> Dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Client": ...
    def __exit__(self, *exc: object) -> None: ...

def connect(
    socket: Optional[_Path] = None,
    *,
    shm_size: Optional[int] = ...,
    shm_threshold: Optional[int] = ...,
    poll: Optional[bool] = ...,
    poll_us: Optional[int] = ...,
    reconnect_ms: Optional[int] = ...,
    direct: Optional[bool] = ...,
    direct_after: Optional[int] = ...,
    fallback: Optional[bool] = ...,
    copy_policy: Optional[str] = ...,
) -> Client: ...
def library_version() -> str: ...
