"""Data sets for the simulator: MNIST shipped with the package, CIFAR-10 and user npz files.

* ``mnist``: the four standard IDX files (gzip) in ``sim/datasets/mnist/``, so it works
  with no network and no flags. Pixels scaled to [0, 1], then normalised with the usual
  mean 0.1307 and std 0.3081.
* ``cifar10``: the standard ``cifar-10-batches-py`` folder under ``--data-dir``.
* ``npz:PATH``: a user file with ``x_train, y_train, x_test, y_test`` and optionally
  ``node`` (the node of each training sample, used by the ``given`` partition).

A missing or corrupt file is an :class:`DataError` naming the file and the format expected.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import pickle
import weakref
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bounds import InputError
from bounds._checks import UNREADABLE_FILE_ERRORS, absent_file, unreadable_reason, whole_numbers

__all__ = [
    "CIFAR10_BATCHES",
    "MNIST_DIR",
    "PIXEL_LEVELS",
    "DataError",
    "Dataset",
    "cifar10_files",
    "dataset_files",
    "device_key",
    "load_cifar10",
    "load_dataset",
    "load_mnist",
    "load_npz",
    "mnist_files",
    "pixel_std",
    "through_table",
]

MNIST_DIR = Path(__file__).resolve().parent / "datasets" / "mnist"
MNIST_FILES = {
    "x_train": "train-images-idx3-ubyte.gz",
    "y_train": "train-labels-idx1-ubyte.gz",
    "x_test": "t10k-images-idx3-ubyte.gz",
    "y_test": "t10k-labels-idx1-ubyte.gz",
}


class DataError(InputError):
    """A data file is missing or not in the expected format."""


@dataclass(frozen=True)
class Dataset:
    """Train and test tensors (float32 inputs, int64 labels) and, optionally, a given node per sample."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    node: np.ndarray | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    @functools.cached_property
    def digest(self) -> str:
        """A digest of the data, kept in a run's checkpoint: a resume is refused when the file under the same
        name now holds other data. It covers every label and given node id, the shapes, and an evenly spaced
        sample of about 2^20 input values per split (hashing all of MNIST's inputs would add 0.3 s to a
        run; the sample takes 25 ms, once per data set: a sweep's runs share it)."""
        h = hashlib.sha256()
        for x in (self.x_train, self.x_test):
            flat = x.reshape(-1)
            h.update(repr(tuple(x.shape)).encode())
            h.update(flat[:: max(1, flat.numel() // 2**20)].numpy().tobytes())
        for y in (self.y_train, self.y_test):
            h.update(y.numpy().tobytes())
        if self.node is not None:
            h.update(np.ascontiguousarray(self.node).tobytes())
        return h.hexdigest()[:16]

    @functools.cached_property
    def full_digest(self) -> str:
        """:attr:`digest` and a CRC-32 of every input value, which :attr:`digest` samples: what the ranks of a
        distributed run compare (two hosts' copies that differ off the sample trained in silence, a review).
        About 0.1 s for MNIST's inputs, once per data set."""
        crc = 0
        for x in (self.x_train, self.x_test):
            crc = zlib.crc32(x.contiguous().numpy().data, crc)
        return f"{self.digest}-{crc:08x}"

    def train_on(self, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
        """(x_train, y_train) on ``device``, copied there once per data set and device: a sweep's runs, their
        engine and the estimates share one copy. (Each run of a sweep used to copy the training set to the
        GPU: MNIST's 188 MB x 400 runs, drift-non-iid-cnn's probe sweep, filled an 80 GB H100, 2026-11-27.)
        The copy lives as long as the data set (the loaders cache two), so for the rest of the process."""
        key = device_key(device)
        if key not in self._device_copies:
            self._device_copies[key] = (self.x_train.to(key), self.y_train.to(key))
        return self._device_copies[key]

    @functools.cached_property
    def _device_copies(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        return {}

    def __getstate__(self) -> dict[str, Any]:
        """What pickles: the data, not the caches (device copies, :attr:`shared`: a weak dictionary does not
        pickle, and a Dataset that had run a sweep did not, a review)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("shared", "_device_copies")}

    @functools.cached_property
    def shared(self) -> weakref.WeakValueDictionary[tuple[Any, ...], Any]:
        """Objects drawn from this data set that the runs of a sweep share while any of them holds one (their
        evaluation samples, :class:`sim.evaluation.Evaluator`), keyed by what they are drawn with; an object
        no run holds any more is dropped (a process that runs sweep after sweep does not keep them all)."""
        return weakref.WeakValueDictionary()


def device_key(device: torch.device | str) -> str:
    """The name of ``device`` that one device has once: "cuda" and "cuda:0" (when 0 is current) are one."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return str(device)


def _read_idx(path: Path, magic: int, ndim: int) -> np.ndarray:
    """One IDX file (present: :func:`mnist_files` checked it) as an array."""
    try:
        with gzip.open(path, "rb") as fh:
            raw = fh.read()
    except (EOFError, zlib.error) as exc:  # cut mid-stream: gzip's EOFError was a traceback (a probe)
        raise DataError(f"data file {str(path)!r} is damaged or cut short ({exc}; expected a whole gzip IDX "
                        "file)") from None  # fmt: skip
    except OSError as exc:
        raise DataError(f"data file {str(path)!r} is not gzip ({exc}; expected a gzip IDX file)") from None
    header = np.frombuffer(raw[: 4 * (1 + ndim)], dtype=">u4") if len(raw) >= 4 * (1 + ndim) else None
    if header is None or header[0] != magic:
        raise DataError(
            f"data file {str(path)!r} is not an IDX file with magic {magic} (expected MNIST format)"
        )
    shape = tuple(int(v) for v in header[1:])
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 * (1 + ndim))
    if body.size != int(np.prod(shape)):
        raise DataError(f"data file {str(path)!r} is truncated: {body.size} bytes for shape {shape}")
    return body.reshape(shape)


PIXEL_LEVELS = np.arange(256, dtype=np.uint8)


def through_table(x: np.ndarray, table: np.ndarray) -> torch.Tensor:
    """Images x (n, C, H, W) of uint8 pixels normalised by a lookup: out[:, c] = table[c, x[:, c]], table
    (C, 256) float32 holding the normalisation of each of the 256 pixel levels. The same floats as the
    formula applied to every pixel (elementwise, so computing it once per level changes nothing;
    tested), in one pass over the images instead of up to four float temporaries. Loading (fresh processes,
    2 cores, 2026-11-27): MNIST 0.40-0.60 s against 0.62-0.76 s, CIFAR-10 3.8-4.2 s against 10.3-11.8 s
    (with :func:`pixel_std`), the same tensors."""
    out = np.empty(x.shape, dtype=np.float32)
    for c in range(x.shape[1]):
        out[:, c] = table[c][x[:, c]]
    return torch.from_numpy(out)


def pixel_std(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Per-channel standard deviation of x / 255 (x (n, C, H, W) uint8, ``mean`` that of x / 255) from
    the exact counts of the 256 pixel levels: sqrt(sum_v count_v (v / 255 - mean)^2 / n). Equal to
    ``(x / 255.0).std(axis=(0, 2, 3))`` to 5e-15 relative and 0.5 s instead of 9.7 s on CIFAR-10's
    training set (2 cores, 2026-11-27; numpy's std makes two float64 copies of 1.2 GB)."""
    counts = np.stack([np.bincount(x[:, c].reshape(-1), minlength=256) for c in range(x.shape[1])])
    deviation2 = ((PIXEL_LEVELS / 255.0)[None] - mean[:, None]) ** 2
    return np.sqrt((counts * deviation2).sum(1) / counts.sum(1))


@functools.lru_cache(maxsize=2)
def load_mnist(directory: Path = MNIST_DIR) -> Dataset:
    """MNIST from the four IDX .gz files in ``directory`` (default: the copy shipped with dflkit).

    Cached per process (read-only tensors are shared by the runs of one sweep).
    """
    files = mnist_files(directory)
    images = {k: _read_idx(files[k], 2051, 3) for k in ("x_train", "x_test")}
    labels = {k: _read_idx(files[k], 2049, 1) for k in ("y_train", "y_test")}
    for split in ("train", "test"):
        _check_labelled_images(
            files[f"x_{split}"], files[f"y_{split}"], images[f"x_{split}"], labels[f"y_{split}"], (28, 28)
        )
    table = ((torch.from_numpy(PIXEL_LEVELS.astype(np.float32) / 255.0) - 0.1307) / 0.3081).numpy()

    def prep(x: np.ndarray) -> torch.Tensor:  # (x / 255 - 0.1307) / 0.3081 in float32, (n, 1, 28, 28)
        return through_table(x[:, None], table[None])

    return Dataset(
        "mnist",
        prep(images["x_train"]),
        torch.from_numpy(labels["y_train"].astype(np.int64)),
        prep(images["x_test"]),
        torch.from_numpy(labels["y_test"].astype(np.int64)),
        10,
    )


def _present(files: dict[str, Path], expected: str) -> dict[str, Path]:
    """``files``, or DataError naming the first that does not exist (and ``expected``, what it should be)."""
    for path in files.values():
        if not path.is_file():
            raise DataError(f"data file {str(path)!r} does not exist (expected {expected})")
    return files


def mnist_files(directory: Path) -> dict[str, Path]:
    """MNIST's four IDX files in ``directory`` by role (x_train, ...); DataError naming the first that is
    missing (checked without reading them)."""
    return _present({role: directory / name for role, name in MNIST_FILES.items()}, "a gzip IDX file")


CIFAR10_BATCHES = (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch")


def cifar10_files(data_dir: Path) -> dict[str, Path]:
    """The six CIFAR-10 python batches in ``data_dir/cifar-10-batches-py`` (or ``data_dir`` itself) by name;
    DataError naming the first that is missing (checked without reading them)."""
    folder = data_dir / "cifar-10-batches-py" if (data_dir / "cifar-10-batches-py").is_dir() else data_dir
    return _present({name: folder / name for name in CIFAR10_BATCHES}, "the cifar-10-batches-py folder")


@functools.lru_cache(maxsize=2)
def load_cifar10(data_dir: Path) -> Dataset:
    """CIFAR-10 from ``data_dir/cifar-10-batches-py`` (or ``data_dir`` itself), per-channel normalised."""
    files = cifar10_files(data_dir)

    def batch(name: str) -> tuple[np.ndarray, np.ndarray]:
        path = files[name]
        try:
            with open(path, "rb") as fh:
                d = pickle.load(fh, encoding="bytes")
            pixels, y = np.asarray(d[b"data"]), np.asarray(d[b"labels"])
            if pixels.dtype != np.uint8:  # float pixels x 1000 were cast to uint8 in silence (a probe)
                raise ValueError(f"its pixels have dtype {pixels.dtype}, expected uint8")
            if pixels.ndim != 2 or pixels.shape[1] != 3 * 32 * 32:  # rows of 2,048 bytes whose total divided
                shape = " x ".join(map(str, pixels.shape))  # by 3,072 loaded as images (a review)
                raise ValueError(f"its data is {shape}, expected a row of 3,072 bytes per image")
            x = pixels.reshape(-1, 3, 32, 32)
        except (pickle.UnpicklingError, KeyError, ValueError, EOFError, TypeError) as exc:
            raise DataError(f"data file {str(path)!r} is not a CIFAR-10 python batch ({exc})") from None
        _check_labelled_images(path, path, x, y, (3, 32, 32))
        return x, y

    parts = [batch(f"data_batch_{i}") for i in range(1, 6)]
    x_train, y_train = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    x_test, y_test = batch("test_batch")
    mean = x_train.reshape(-1, 3, 1024).mean(axis=(0, 2)) / 255.0
    table = ((PIXEL_LEVELS / 255.0)[None] - mean[:, None]) / pixel_std(x_train, mean)[:, None]

    def prep(x: np.ndarray) -> torch.Tensor:  # (x / 255 - mean_c) / std_c in float64, then float32
        return through_table(x, table.astype(np.float32))

    return Dataset(
        "cifar10",
        prep(x_train),
        torch.from_numpy(y_train.astype(np.int64)),
        prep(x_test),
        torch.from_numpy(y_test.astype(np.int64)),
        10,
    )


CLASSES = 10
"""MNIST's and CIFAR-10's classes, labelled 0 .. 9."""


def _check_labelled_images(
    images_path: Path, labels_path: Path, x: np.ndarray, y: np.ndarray, shape: tuple[int, ...]
) -> None:
    """DataError unless the images x have ``shape`` each and y holds one label in 0 .. 9 per image. A labels
    file of another length trained in silence on what it held (or failed inside the evaluation with an
    IndexError, after the run folder's earlier results were removed), a label of 200 failed mid-run inside
    torch, images of 56 x 14 trained logreg (a probe)."""
    where = (
        f"data file {str(images_path)!r} holds"
        if labels_path == images_path
        else f"data files {str(images_path)!r} and {str(labels_path)!r} hold"
    )
    if tuple(x.shape[1:]) != shape:
        sizes = [" x ".join(map(str, s)) for s in (x.shape[1:], shape)]
        raise DataError(f"data file {str(images_path)!r} holds images of {sizes[0]} (expected {sizes[1]})")
    if y.ndim != 1 or len(y) != len(x):
        raise DataError(f"{where} {len(x):,} images and {y.size:,} labels (expected one label per image)")
    if y.dtype.kind not in "biuf":
        raise DataError(f"data file {str(labels_path)!r} holds labels of dtype {y.dtype} (expected 0 .. 9)")
    outside = (y < 0) | (y >= CLASSES) | (y != np.floor(y))
    if outside.any():
        at = int(outside.argmax())
        raise DataError(
            f"data file {str(labels_path)!r} has the label {y[at].item()!r} at sample {at:,} (expected "
            f"labels 0 .. {CLASSES - 1})"
        )


FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_CLASSES = 100_000  # a label of 10^9 asked torch for a 20 GB output layer


def _check_split(path: Path, name: str, x: np.ndarray, y: np.ndarray) -> None:
    """One split of a user data set: numeric finite inputs, one integer label >= 0 per input."""
    if x.dtype.kind not in "biuf" or x.ndim < 2 or len(x) == 0 or x.size == 0:  # (n, 0): no features
        raise DataError(
            f"{path}: x_{name} has dtype {x.dtype} and shape {x.shape} (expected a non-empty numeric "
            "array, one row per sample, with at least one feature)"
        )
    if not np.isfinite(x).all():
        bad = int((~np.isfinite(x)).sum())
        raise DataError(f"{path}: x_{name} has {bad} NaN or inf values (expected finite inputs)")
    largest = float(np.abs(x).max())
    if largest > FLOAT32_MAX:  # the models take float32: it would become inf (then a "diverged" run)
        raise DataError(
            f"{path}: x_{name} has a value of magnitude {largest:.3g} (expected inputs within float32's "
            f"range, |x| <= {FLOAT32_MAX:.3g}; rescale them)"
        )
    if y.ndim != 1 or len(y) != len(x):
        raise DataError(f"{path}: y_{name} has shape {y.shape} for {len(x)} inputs (expected one label each)")
    if not whole_numbers(y):
        raise DataError(
            f"{path}: y_{name} has dtype {y.dtype} with non-integer values (expected integer class labels)"
        )
    if len(y) and y.min() < 0:
        raise DataError(f"{path}: y_{name} has a label {y.min()} < 0 (expected class labels 0, 1, 2, ...)")
    if len(y) and y.max() >= MAX_CLASSES:  # the output layer has one row per class up to the largest label
        raise DataError(
            f"{path}: y_{name} has a label {y.max():g} (expected class labels 0 .. {MAX_CLASSES - 1:,}; the "
            "model has one output per class up to the largest label)"
        )


def _check_node_ids(path: Path, node: np.ndarray, samples: int) -> None:
    """A user data set's ``node`` array: one whole-number id in 0 .. samples - 1 per training sample."""
    if node.ndim != 1 or len(node) != samples:
        raise DataError(f"{path}: node has shape {node.shape} (expected one node id per training sample)")
    if not whole_numbers(node):
        raise DataError(
            f"{path}: node has dtype {node.dtype} with values that are not whole numbers (expected integer "
            "node ids 0, 1, 2, ...)"
        )
    if len(node) and node.min() < 0:  # (--nodes is not known here: the partition checks ids < nodes)
        raise DataError(f"{path}: node has an id {node.min():g} < 0 (expected node ids 0 .. nodes - 1)")
    if len(node) and node.max() >= len(node):
        raise DataError(
            f"{path}: node has an id {node.max():g}, more than its {len(node)} training samples can fill "
            "(expected node ids 0 .. nodes - 1, each node with a sample)"
        )


def load_npz(path: Path) -> Dataset:
    """A user data set: ``x_train, y_train, x_test, y_test`` (+ optional ``node``) in one .npz."""
    if not path.is_file():
        raise DataError(
            f"data file {str(path)!r} {absent_file(path)} (expected an .npz with x_train, y_train, ...)"
        )
    try:
        loaded = np.load(path, allow_pickle=False)
    except UNREADABLE_FILE_ERRORS as exc:
        raise DataError(
            f"data file {str(path)!r} is not a readable .npz ({unreadable_reason(path, exc)})"
        ) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):  # a .npy file holds one array, not named ones
        raise DataError(
            f"data file {str(path)!r} holds one array of shape {loaded.shape} (expected an .npz archive with "
            "x_train, y_train, x_test, y_test: numpy.savez)"
        )
    with loaded as f:
        try:
            arrays = {k: f[k] for k in f.files}
        except UNREADABLE_FILE_ERRORS as exc:
            raise DataError(f"data file {str(path)!r} is not a readable .npz ({exc})") from None
    missing = [k for k in ("x_train", "y_train", "x_test", "y_test") if k not in arrays]
    if missing:
        raise DataError(
            f"data file {str(path)!r} lacks {', '.join(missing)} (expected x_train, y_train, "
            "x_test, y_test and optionally node)"
        )
    y_train, y_test = arrays["y_train"], arrays["y_test"]
    for name, y, x in (("train", y_train, arrays["x_train"]), ("test", y_test, arrays["x_test"])):
        _check_split(path, name, x, y)
    if arrays["x_train"].shape[1:] != arrays["x_test"].shape[1:]:
        raise DataError(
            f"{path}: x_test has sample shape {arrays['x_test'].shape[1:]} but x_train "
            f"{arrays['x_train'].shape[1:]} (expected the same shape for both)"
        )
    top = y_train.max(initial=0)
    unseen = np.unique(y_test[y_test > top])
    if len(unseen):  # 1-based test labels grew the model by a class and scored accuracy 0, silently
        shown = ", ".join(f"{v:g}" for v in unseen[:5]) + (", ..." if len(unseen) > 5 else "")
        raise DataError(
            f"{path}: y_test has {len(unseen)} label(s) above y_train's largest, {top:g} ({shown}; expected "
            "both labelled 0, 1, 2, ...: the model has one output per class up to the largest training label)"
        )
    node = arrays.get("node")
    if node is not None:
        _check_node_ids(path, node, len(y_train))
    classes = int(max(y_train.max(initial=0), y_test.max(initial=0))) + 1
    as_x = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))  # noqa: E731
    as_y = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))  # noqa: E731
    return Dataset(
        f"npz:{path}",
        as_x(arrays["x_train"]),
        as_y(y_train),
        as_x(arrays["x_test"]),
        as_y(y_test),
        classes,
        None if node is None else node.astype(np.int64),
    )


def _data_folder(data_dir: str | Path | None) -> Path | None:
    """``data_dir`` as a folder, None where not given; DataError for an empty string (an unset $DATA in
    ``--data-dir $DATA``): MNIST then trained on the shipped copy and CIFAR-10 read the current folder, in
    silence (a probe)."""
    if data_dir is None:
        return None
    if isinstance(data_dir, str) and not data_dir.strip():
        raise DataError(f"data_dir = {data_dir!r} is empty (expected a folder of the data set's files; an "
                        "unset $DATA, say)")  # fmt: skip
    return Path(data_dir)


def _cifar10_dir(data_dir: str | Path | None) -> Path:
    folder = _data_folder(data_dir)
    if folder is None:
        raise DataError("dataset 'cifar10' needs --data-dir (expected a folder holding cifar-10-batches-py)")
    return folder


def dataset_files(name: str, data_dir: str | Path | None = None) -> dict[str, Path]:
    """The files :func:`load_dataset` reads for ``mnist`` or ``cifar10``, checked present without reading
    them (DataError as load_dataset gives it)."""
    if name == "mnist":
        return mnist_files(_data_folder(data_dir) or MNIST_DIR)
    if name == "cifar10":
        return cifar10_files(_cifar10_dir(data_dir))
    raise DataError(f"dataset {name!r} has no fixed files (expected mnist or cifar10)")


def load_dataset(name: str, data_dir: str | Path | None = None) -> Dataset:
    """``mnist`` (shipped), ``cifar10`` (needs data_dir) or ``npz:PATH``."""
    if not isinstance(name, str):
        raise DataError(f"dataset = {name!r} (expected a name: mnist, cifar10 or npz:PATH)")
    if name == "mnist":
        return load_mnist(_data_folder(data_dir) or MNIST_DIR)
    if name == "cifar10":
        return load_cifar10(_cifar10_dir(data_dir))
    if name.startswith("npz:"):
        return load_npz(Path(name.removeprefix("npz:")))
    raise DataError(f"unknown dataset {name!r} (expected mnist, cifar10 or npz:PATH)")
