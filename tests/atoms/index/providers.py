"""Providers that misbehave, for tests of the failure paths."""

from __future__ import annotations


class WrongDims:
    """Claims 8 dimensions and returns 4."""

    id = "wrong-dims"
    dimensions = 8

    def encode(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]


class Broken:
    """Fails every encode (a model that crashed)."""

    id = "broken"
    dimensions = 4

    def encode(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("the encoder crashed")


class PausingFake:
    """The fake provider, recording each encode call in `<MH_FAULT_DIR>/encode-<n>` (holding
    the pid and the number of texts). With MH_FAULT_PAUSE=encode-<k>, call k never returns:
    the test kills the process there. Used only by worker tests."""

    def __init__(self, dimensions: int = 64) -> None:
        from atoms.core.embedding import FakeHashProvider

        self.inner = FakeHashProvider(dimensions)
        self.id = self.inner.id
        self.dimensions = dimensions

    def encode(self, texts: list[str]) -> list[list[float]]:
        import os
        import time
        from pathlib import Path

        folder = os.environ.get("MH_FAULT_DIR", "")
        if folder:
            n = 1
            while True:
                try:
                    fd = os.open(Path(folder) / f"encode-{n}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    break
                except FileExistsError:
                    n += 1
            os.write(fd, f"{os.getpid()} {len(texts)}".encode())
            os.close(fd)
            if os.environ.get("MH_FAULT_PAUSE") == f"encode-{n}":
                while True:  # killed here by the test
                    time.sleep(1)
        return self.inner.encode(texts)
