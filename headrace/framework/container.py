"""The file every save writes: named arrays in the safetensors layout, checksummed, written atomically.

Layout (the safetensors format, written and read here with NumPy only):
``[8-byte little-endian header length N][N bytes of JSON header][tensor data]``.  The header maps
each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets into the data,
which the tensors cover back to back) and ``"__metadata__"`` to a str -> str table.  headrace adds
three metadata entries: ``headrace_format`` (this layout's version), ``headrace_kind`` (what the file
holds) and ``headrace_crc32``: a CRC-32 of the header (as written, without that entry) followed by
all tensor bytes.  Any other str -> str entries carry the caller's JSON (an object tree, a program).

Why this format (docs/architecture.md, "Saving and loading"): it cannot carry code (JSON plus raw
little-endian bytes; the reader admits a fixed list of dtypes), files are readable by the
``safetensors`` package and other tools, and loading is one read per tensor into its own array.

Guarantees:
- **atomic**: ``atomic_file`` writes to a temporary file in the target's directory, flushes,
  fsyncs, ``os.replace``s it over the target and fsyncs the directory; a process killed at any
  moment leaves the old file or the new one;
- **verified**: ``read`` refuses a truncated file, a header that does not parse or describes
  impossible offsets, and content whose CRC differs from the recorded one, with a
  ``CheckpointError`` naming the file and what failed.  Files without headrace's metadata (written
  by other safetensors writers) load without a checksum to verify.
"""
from __future__ import annotations

import contextlib
import io
import json
import mmap
import os
import struct
import tempfile
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core.errors import CheckpointError

LAYOUT_VERSION = "1"
CRC_KEY, FORMAT_KEY, KIND_KEY = "headrace_crc32", "headrace_format", "headrace_kind"
_CRC_PLACEHOLDER = "00000000"
_MAX_HEADER = 1 << 30

_TO_CODE = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32",
            "int16": "I16", "int8": "I8", "uint64": "U64", "uint32": "U32", "uint16": "U16",
            "uint8": "U8", "bool": "BOOL"}
_FROM_CODE = {code: np.dtype(name).newbyteorder("<") for name, code in _TO_CODE.items()}


@contextlib.contextmanager
def atomic_file(path: str):
    """Yield a binary file object; on success its content replaces ``path`` atomically."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        old = _hold(path)
        os.replace(tmp, path)
        _release_later(old)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def write_many(files) -> None:
    """``write`` for several files at once (``files``: ``(path, arrays, metadata, kind)`` tuples), with
    the same per-file guarantee: each file's content is fsynced before it replaces its target.  The
    fsyncs run in threads (``os.fsync`` releases the GIL, and the disk serves them together) and each
    directory is fsynced once, not once per file: ``save_vars`` writes one file per variable, and
    hundreds of serial fsyncs made a ResNet's ``save_inference_model`` take seconds (issue 17)."""
    files = list(files)
    pending = []   # (tmp, path) not yet renamed
    try:
        for path, arrays, metadata, kind in files:
            path = os.fspath(path)
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
            pending.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                write_to(f, arrays, metadata, kind)
        _fsync_paths([tmp for tmp, _ in pending])
        pending.reverse()
        while pending:
            tmp, path = pending[-1]
            old = _hold(path)
            os.replace(tmp, path)
            pending.pop()
            _release_later(old)
    except BaseException:
        for tmp, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    for directory in sorted({os.path.dirname(os.path.abspath(os.fspath(f[0]))) for f in files}):
        _fsync_dir(directory)


def _fsync_paths(paths) -> None:
    def sync(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(paths)))) as pool:
        list(pool.map(sync, paths))


def _hold(path: str):
    """An open descriptor of the file about to be replaced (or None): freeing a large replaced
    file's pages then happens when it is closed, in a background thread, not inside the rename."""
    try:
        return os.open(path, os.O_RDONLY) if os.path.getsize(path) >= _OVERLAP_FROM else None
    except OSError:
        return None


def _release_later(fd) -> None:
    if fd is not None:
        threading.Thread(target=os.close, args=(fd,), name="headrace-release-old", daemon=True).start()


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _canonical(header: dict) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _little_contiguous(name: str, array) -> np.ndarray:
    array = np.asarray(array)
    code = _TO_CODE.get(array.dtype.name)
    if code is None:
        raise CheckpointError(f"cannot save {name!r}: dtype {array.dtype} is not one of {sorted(_TO_CODE)}")
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return array if array.flags.c_contiguous else array.copy(order="C")


def write(path: str, arrays: dict, metadata: dict | None = None, kind: str = "tensors") -> None:
    """Write ``arrays`` (name -> ndarray) and ``metadata`` (str -> str) to ``path`` atomically."""
    with atomic_file(path) as f:
        write_to(f, arrays, metadata, kind)


def to_bytes(arrays: dict, metadata: dict | None = None, kind: str = "tensors") -> bytes:
    """What ``write`` would write, as bytes."""
    buffer = io.BytesIO()
    write_to(buffer, arrays, metadata, kind)
    return buffer.getvalue()


def from_bytes(data: bytes, name: str = "<bytes>") -> tuple:
    """``read`` for bytes ``to_bytes`` made; errors name ``name``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, got {type(data).__name__}")
    return read_from(io.BytesIO(data), name, len(data))


def write_to(f, arrays: dict, metadata: dict | None, kind: str) -> None:
    """The container written to the seekable binary file ``f`` from its current start (0)."""
    arrays = {str(k): _little_contiguous(k, v) for k, v in arrays.items()}
    order = sorted(arrays, key=lambda k: -arrays[k].dtype.itemsize)   # keeps every tensor aligned
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    meta.update({FORMAT_KEY: LAYOUT_VERSION, KIND_KEY: kind})
    header, offset = {}, 0
    for name in order:
        size = arrays[name].nbytes
        header[name] = {"dtype": _TO_CODE[arrays[name].dtype.name], "shape": list(arrays[name].shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = meta
    crc = zlib.crc32(_canonical(header))
    meta[CRC_KEY] = _CRC_PLACEHOLDER
    text = _canonical(header)
    text += b" " * (-(8 + len(text)) % 64)
    crc_at = 8 + text.index(f'"{CRC_KEY}":"'.encode()) + len(CRC_KEY) + 4
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    views = [memoryview(arrays[name]).cast("B") if arrays[name].nbytes else b"" for name in order]
    crc = _crc_while(lambda: [f.write(view) for view in views], views, crc, offset >= _OVERLAP_FROM)
    end = f.tell()
    f.seek(crc_at)
    f.write(f"{crc:08x}".encode())
    f.seek(end)


_OVERLAP_FROM = 4 << 20


def _crc_while(write, views: list, crc: int, overlap: bool) -> int:
    """Run ``write()`` and the CRC-32 of ``views`` (chained from ``crc``) side by side: zlib and
    file writes release the GIL, so a large save costs about the longer of the two, not both."""
    if not overlap:
        write()
        for view in views:
            crc = zlib.crc32(view, crc)
        return crc
    result = {}

    def checksum():
        value = crc
        for view in views:
            value = zlib.crc32(view, value)
        result["crc"] = value

    worker = threading.Thread(target=checksum, name="headrace-save-crc", daemon=True)
    worker.start()
    try:
        write()
    finally:
        worker.join()
    return result["crc"]


def read(path: str) -> tuple:
    """``(arrays, metadata)`` from a file ``write`` (or another safetensors writer) made."""
    path = os.fspath(path)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path!r}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < _MMAP_FROM:
            return read_from(f, path, size)
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        except (OSError, ValueError):   # a file system without mmap
            return read_from(f, path, size)
        header, text = _read_header(f, path, size)
    return _read_mapped(mapped, header, text, path, size)


_MMAP_FROM = 1 << 20


def _read_mapped(mapped, header: dict, text: bytes, path: str, size: int) -> tuple:
    """``read`` of a memory-mapped file: the arrays are writable copy-on-write views of the
    mapping (no copy; the file on disk never changes), checked by the same CRC.  Safe because
    headrace replaces files by rename and never rewrites one in place."""
    view = memoryview(mapped)
    meta, entries, crc, recorded = _parse_header(header, text, path, size)
    start = 8 + len(text)
    if recorded is not None:
        crc = zlib.crc32(view[start:], crc)
    arrays, offset = {}, start
    for name, dtype, shape, count in entries:
        array = np.frombuffer(mapped, dtype=dtype, count=count // dtype.itemsize, offset=offset).reshape(shape)
        arrays[name] = array if dtype.isnative else array.astype(dtype.newbyteorder("="))
        offset += count
    _check_crc(crc, recorded, path)
    return arrays, {k: v for k, v in meta.items() if k != CRC_KEY}


def _parse_header(header: dict, text: bytes, path: str, size: int) -> tuple:
    """``(metadata, entries, CRC of the header, recorded CRC or None for foreign files)``."""
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise CheckpointError(f"{path}: corrupt header: `__metadata__` must map str to str")
    entries = _entries(header, path, size - 8 - len(text))
    if CRC_KEY not in meta and FORMAT_KEY not in meta:
        return meta, entries, 0, None
    if _canonical(dict(header, __metadata__=meta)) != text.rstrip(b" ") or CRC_KEY not in meta:
        raise CheckpointError(f"{path}: corrupt header (it differs from what headrace writes)")
    crc = zlib.crc32(_canonical(dict(header, __metadata__={k: v for k, v in meta.items() if k != CRC_KEY})))
    layout = meta.get(FORMAT_KEY, LAYOUT_VERSION)
    if layout != LAYOUT_VERSION:
        newer = layout.isdigit() and int(layout) > int(LAYOUT_VERSION)
        raise CheckpointError(f"{path}: file layout version {layout!r}" + (
            f" was written by a newer headrace; this one reads version {LAYOUT_VERSION}: upgrade headrace to load it"
            if newer else f" is unknown (this headrace reads version {LAYOUT_VERSION})"))
    return meta, entries, crc, meta[CRC_KEY]


def _check_crc(crc: int, recorded, path: str) -> None:
    if recorded is not None and f"{crc:08x}" != recorded:
        raise CheckpointError(f"{path}: checksum mismatch (content CRC-32 {crc:08x}, recorded {recorded}): "
                              "the file is corrupt; nothing was loaded from it")


def read_from(f, path: str, size: int) -> tuple:
    """``read`` for an open binary file of ``size`` bytes (read into arrays of their own)."""
    header, text = _read_header(f, path, size)
    meta, entries, crc, recorded = _parse_header(header, text, path, size)
    arrays = {}
    for name, dtype, shape, count in entries:
        array = np.empty(shape, dtype=dtype)
        view = memoryview(array).cast("B") if array.nbytes else bytearray()
        if f.readinto(view) != count:
            raise CheckpointError(f"{path}: truncated while reading tensor {name!r}")
        if recorded is not None:
            crc = zlib.crc32(view, crc)
        arrays[name] = array if dtype.isnative else array.astype(dtype.newbyteorder("="))
    _check_crc(crc, recorded, path)
    return arrays, {k: v for k, v in meta.items() if k != CRC_KEY}


def _read_header(f, path: str, size: int):
    if size < 8:
        raise CheckpointError(f"{path}: truncated or not a headrace file ({size} bytes; no header)")
    (length,) = struct.unpack("<Q", f.read(8))
    if length > min(size - 8, _MAX_HEADER):
        raise CheckpointError(f"{path}: truncated or not a headrace file (the header claims {length} bytes, "
                              f"the file has {size - 8} after the length)")
    text = f.read(length)
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{path}: corrupt header (not valid JSON: {exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: corrupt header (not a JSON object)")
    return header, text


def _entries(header: dict, path: str, data_size: int) -> list:
    """Validated ``(name, dtype, shape, byte count)`` in file order; offsets must tile the data."""
    entries = []
    for name, info in header.items():
        try:
            dtype = _FROM_CODE[info["dtype"]]
            shape = tuple(info["shape"])
            begin, end = info["data_offsets"]
            if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
                raise ValueError("bad shape")
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{path}: corrupt header entry for {name!r}: {info!r:.100} ({exc})") from None
        count = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if not (isinstance(begin, int) and isinstance(end, int) and end - begin == count):
            raise CheckpointError(f"{path}: corrupt header entry for {name!r}: offsets {[begin, end]} do not "
                                  f"hold {count} bytes of shape {list(shape)}")
        entries.append((begin, name, dtype, shape, count))
    entries.sort(key=lambda e: e[0])
    position = 0
    for begin, name, _, _, count in entries:
        if begin != position:
            raise CheckpointError(f"{path}: corrupt header: tensor {name!r} starts at byte {begin}, expected {position}")
        position += count
    if position != data_size:
        what = "truncated" if position > data_size else "corrupt"
        raise CheckpointError(f"{path}: {what}: the header describes {position} bytes of tensor data, "
                              f"the file holds {data_size}")
    return [e[1:] for e in entries]
