from atoms.models.access import InputToken, Receipt, Ref, ReplayRecord, Tombstone
from atoms.models.index import IndexCheckpoint, IndexEntry, PolicyFeed, VectorIndexSnapshot, VectorTombstone
from atoms.models.lexical import LexicalCorpus, LexicalPosting, LexicalTerm
from atoms.models.review import ReviewNote
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
    "LexicalCorpus",
    "LexicalPosting",
    "LexicalTerm",
    "Origin",
    "PolicyFeed",
    "PurgedAtom",
    "Receipt",
    "Ref",
    "ReplayRecord",
    "ReviewNote",
    "Revision",
    "Slot",
    "Tombstone",
    "UseMarker",
    "UseState",
    "VectorIndexSnapshot",
    "VectorTombstone",
]
