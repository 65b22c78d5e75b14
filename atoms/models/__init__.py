from atoms.models.access import InputToken, Receipt, Ref, ReplayRecord, Tombstone
from atoms.models.index import IndexCheckpoint, IndexEntry, VectorIndexSnapshot, VectorTombstone
from atoms.models.storage import (
    Atom,
    AtomStore,
    EraseDependency,
    ErasureReceipt,
    Origin,
    PurgedAtom,
    Revision,
    Slot,
)
from atoms.models.uses import UseMarker, UseState

__all__ = [
    "Atom",
    "AtomStore",
    "EraseDependency",
    "ErasureReceipt",
    "IndexCheckpoint",
    "IndexEntry",
    "InputToken",
    "Origin",
    "PurgedAtom",
    "Receipt",
    "Ref",
    "ReplayRecord",
    "Revision",
    "Slot",
    "Tombstone",
    "UseMarker",
    "UseState",
    "VectorIndexSnapshot",
    "VectorTombstone",
]
