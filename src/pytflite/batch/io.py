"""Where batch jobs read items and write results.

A source is a list of keys plus `load(key)`, which reads one item (a dict of arrays without the batch
axis) only when asked, so a bad file fails alone and is named:
- a folder: one item a file, sorted by name; `.npy` (the model's one input), `.npz` (arrays named as the
  inputs), `.png`/`.jpg`/`.jpeg` (uint8 [H, W, C] pixels, not resized: Pillow), `.wav` (float32 samples
  in [-1, 1), [frames] mono or [frames, channels]);
- a file: `.npy` (axis 0: the items of the one input), `.npz` (one array an input), `.parquet` (one
  column an input; pyarrow).
A sink writes a batch at once and knows which keys are done, so a rerun resumes:
- a folder: KEY.npy for a one-output model, KEY.npz (arrays named as the outputs) otherwise;
- `NAME.parquet`: a folder of part files (one a batch, readable as one data set by pyarrow, pandas and
  Ray), a `key` column and one column an output (a fixed-shape tensor column for arrays).
Every file is written under a temporary name and renamed, so an interrupted job leaves no half file.
A damaged file is a BatchError (an ItemError for one item) naming it and the decoder's complaint:
NumPy, zipfile, wave, Pillow and pyarrow each raise their own exception types on garbage (tokenize's
TokenError from a .npy header, zipfile's BadZipFile, Pillow's SyntaxError), so the readers catch them
all at that boundary, a MemoryError excepted.
"""

from __future__ import annotations

import os
import wave
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .predictor import BatchError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
FOLDER_SUFFIXES = (".npy", ".npz", ".wav", *IMAGE_SUFFIXES)
Item = dict[str, np.ndarray]


class ItemError(BatchError):
    """One input item could not be read; `key` names it (the file, or the file and row)."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key


def optional(module: str, purpose: str) -> Any:
    """Import pyarrow or PIL, or fail naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise BatchError(f"{purpose} needs {module.split('.')[0]}: pip install 'pytflite[batch]'") from None


# --- reading ----------------------------------------------------------------------------------------


def read_wav(path: Path) -> np.ndarray:
    """PCM samples as float32 in [-1, 1) (8-bit unsigned, 16- and 32-bit signed), [frames(, channels)]."""
    with wave.open(str(path), "rb") as reader:
        width, channels = reader.getsampwidth(), reader.getnchannels()
        frames = reader.readframes(reader.getnframes())
    if width == 1:
        samples = (np.frombuffer(frames, np.uint8).astype(np.float32) - 128) / 128
    elif width in (2, 4):
        dtype = np.dtype(f"<i{width}")
        samples = np.frombuffer(frames, dtype).astype(np.float32) / float(2 ** (8 * width - 1))
    else:
        raise ValueError(f"{8 * width}-bit samples are not supported (8, 16 or 32-bit PCM)")
    return samples.reshape(-1, channels) if channels > 1 else samples


def read_image(path: Path) -> np.ndarray:
    image_module = optional("PIL.Image", "reading images")
    with image_module.open(path) as image:
        if image.mode not in ("L", "RGB", "RGBA"):
            image = image.convert("RGB")
        return np.asarray(image)


def _read_file(path: Path, input_names: Sequence[str]) -> Item:
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as arrays:
            return {name: arrays[name] for name in arrays.files}
    if suffix == ".npy":
        array = np.load(path, allow_pickle=False)
    elif suffix == ".wav":
        array = read_wav(path)
    else:
        array = read_image(path)
    if len(input_names) != 1:
        raise ValueError(f"the model has {len(input_names)} inputs: give each item as an .npz")
    return {input_names[0]: array}


class Source:
    """Keys in order and `load(key) -> item`; a failure to read one item raises ItemError naming it."""

    def __init__(self, keys: Sequence[str], load: Callable[[str], Item], describe: Callable[[str], str]):
        self.keys = list(keys)
        self._load = load
        self.describe = describe

    def load(self, key: str) -> Item:
        try:
            return self._load(key)
        except BatchError as error:
            raise ItemError(self.describe(key), str(error)) from None
        except MemoryError:
            raise
        except Exception as error:  # a decoder's own on a damaged file (see the module's docstring)
            raise ItemError(self.describe(key), f"cannot read it: {type(error).__name__}: {error}") from None


def open_source(path: str | os.PathLike, input_names: Sequence[str]) -> Source:
    """The items at `path` (a folder, or a .npy/.npz/.parquet file) for a model with these inputs."""
    path = Path(path)
    if path.is_dir():
        return _folder_source(path, input_names)
    if not path.is_file():
        raise BatchError(f"no such input file or folder: {path}")
    try:
        return _file_source(path, input_names)
    except (BatchError, MemoryError):
        raise
    except Exception as error:  # a decoder's own on a damaged file (see Source.load)
        raise BatchError(f"{path}: cannot read it: {type(error).__name__}: {error}") from None


def _file_source(path: Path, input_names: Sequence[str]) -> Source:
    suffix = path.suffix.lower()
    if suffix == ".npy":
        if len(input_names) != 1:
            raise BatchError(f"{path}: one .npy array cannot feed {len(input_names)} inputs (use .npz)")
        columns = {input_names[0]: np.load(path, mmap_mode="r", allow_pickle=False)}
    elif suffix == ".npz":
        with np.load(path, allow_pickle=False) as arrays:
            missing = [n for n in input_names if n not in arrays.files]
            if missing:
                raise BatchError(
                    f"{path} has arrays {arrays.files}, the model's inputs {missing} are missing"
                )
            columns = {name: arrays[name] for name in input_names}
    elif suffix == ".parquet":
        columns = _parquet_columns(path, input_names)
    else:
        raise BatchError(f"{path}: inputs are a folder or a .npy, .npz or .parquet file")
    lengths = {name: len(column) for name, column in columns.items()}
    if len(set(lengths.values())) > 1:
        raise BatchError(f"{path}: the inputs have different numbers of items: {lengths}")
    count = next(iter(lengths.values()))
    width = len(str(max(count - 1, 0)))
    keys = [f"{row:0{width}d}" for row in range(count)]
    return Source(
        keys,
        lambda key: {name: np.asarray(column[int(key)]) for name, column in columns.items()},
        lambda key: f"{path} item {int(key)}",
    )


def _folder_source(folder: Path, input_names: Sequence[str]) -> Source:
    files = {}
    for entry in sorted(folder.iterdir()):
        if entry.is_file() and entry.suffix.lower() in FOLDER_SUFFIXES:
            if entry.stem in files:
                raise BatchError(f"{files[entry.stem].name} and {entry.name} both make item {entry.stem!r}")
            files[entry.stem] = entry
    if not files:
        raise BatchError(f"{folder} holds no {', '.join(FOLDER_SUFFIXES)} files")
    return Source(files, lambda key: _read_file(files[key], input_names), lambda key: str(files[key]))


def _parquet_columns(path: Path, input_names: Sequence[str]) -> dict[str, Any]:
    parquet = optional("pyarrow.parquet", "reading Parquet")
    table = parquet.read_table(path)
    missing = [n for n in input_names if n not in table.column_names]
    if missing:
        raise BatchError(f"{path} has columns {table.column_names}, the model's inputs {missing} are missing")
    return {name: _ParquetColumn(table.column(name).combine_chunks()) for name in input_names}


class _ParquetColumn:
    """A Parquet column read cell by cell: tensor columns as arrays, list columns as nested lists."""

    def __init__(self, column: Any):
        self._column = column

    def __len__(self) -> int:
        return len(self._column)

    def __getitem__(self, row: int) -> np.ndarray:
        cell = self._column[row]
        if cell.as_py() is None:
            raise ValueError("the cell is null")
        if hasattr(cell, "to_numpy_ndarray"):  # a fixed-shape tensor cell
            return cell.to_numpy_ndarray()
        return np.array(cell.as_py())


# --- writing ----------------------------------------------------------------------------------------


def _replace(path: Path, write: Callable[[Path], None]) -> None:
    partial = path.with_name(f".{path.name}.partial")
    write(partial)
    os.replace(partial, path)


class FolderSink:
    """KEY.npy (one output) or KEY.npz (several) per item in a folder."""

    def __init__(self, folder: Path, output_names: Sequence[str]):
        self.folder = folder
        self.output_names = tuple(output_names)
        self.suffix = ".npy" if len(self.output_names) == 1 else ".npz"
        folder.mkdir(parents=True, exist_ok=True)

    def done_keys(self) -> set[str]:
        return {p.name[: -len(self.suffix)] for p in self.folder.glob(f"*{self.suffix}")}

    def write(self, keys: Sequence[str], outputs: dict[str, np.ndarray]) -> None:
        for row, key in enumerate(keys):
            if self.suffix == ".npy":
                value = outputs[self.output_names[0]][row]
                _replace(self.folder / f"{key}.npy", lambda p, v=value: _save(p, v))
            else:
                values = {name: outputs[name][row] for name in self.output_names}
                _replace(self.folder / f"{key}.npz", lambda p, v=values: _savez(p, v))


def _save(path: Path, value: np.ndarray) -> None:
    with open(path, "wb") as f:
        np.save(f, value)


def _savez(path: Path, values: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:
        np.savez(f, **values)


class ParquetSink:
    """A folder NAME.parquet of part files, one a batch; column `key` plus one column an output."""

    def __init__(self, folder: Path, output_names: Sequence[str]):
        self.pa = optional("pyarrow", "writing Parquet")
        self.parquet = optional("pyarrow.parquet", "writing Parquet")
        if folder.is_file():
            raise BatchError(f"{folder} is a file: Parquet output is a folder of parts (remove the file)")
        self.folder = folder
        self.output_names = tuple(output_names)
        folder.mkdir(parents=True, exist_ok=True)
        numbers = [int(p.stem[5:]) for p in folder.glob("part-*.parquet") if p.stem[5:].isdigit()]
        self._next = max(numbers, default=-1) + 1

    def done_keys(self) -> set[str]:
        keys: set[str] = set()
        for part in sorted(self.folder.glob("part-*.parquet")):
            keys.update(self.parquet.read_table(part, columns=["key"]).column("key").to_pylist())
        return keys

    def write(self, keys: Sequence[str], outputs: dict[str, np.ndarray]) -> None:
        columns = {"key": self.pa.array(list(keys), self.pa.string())}
        for name in self.output_names:
            value = np.ascontiguousarray(outputs[name])
            if value.ndim == 1:
                columns[name] = self.pa.array(value)
            else:
                columns[name] = self.pa.FixedShapeTensorArray.from_numpy_ndarray(value)
        table = self.pa.table(columns)
        part = self.folder / f"part-{self._next:06d}.parquet"
        _replace(part, lambda p: self.parquet.write_table(table, p))
        self._next += 1


def open_sink(path: str | os.PathLike, output_names: Sequence[str]) -> FolderSink | ParquetSink:
    """Parquet parts for a path ending in .parquet, else .npy/.npz files in a folder."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        return ParquetSink(path, output_names)
    if path.is_file():
        raise BatchError(f"{path} is a file: the output is a folder, or a name ending in .parquet")
    return FolderSink(path, output_names)
