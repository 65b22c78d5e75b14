"""Who did something: an API key, a logged-in person or the system itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


class KeyLike(Protocol):
    """What an actor needs of an API key (tenants.models.ApiKey); a protocol, because the
    plumbing sits below the tenants app (docs/architecture.md "Layers")."""

    @property
    def pk(self) -> Any: ...
    @property
    def public_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def created_by_id(self) -> int | None: ...
    @property
    def created_by(self) -> AbstractBaseUser | None: ...


ActorKind = Literal["key", "user", "system"]


@dataclass(frozen=True)
class Actor:
    kind: ActorKind
    label: str
    key_id: int | None = None
    user_id: int | None = None
    # The person a key acts for (a reviewer key's holder); stores may show it as the writer.
    on_behalf_of: str | None = None

    @classmethod
    def for_key(cls, key: KeyLike) -> Actor:
        holder = key.created_by.get_username() if key.kind == "reviewer" and key.created_by is not None else None
        return cls(kind="key", label=f"key:{key.public_id}", key_id=key.pk, on_behalf_of=holder)

    @classmethod
    def for_user(cls, user: AbstractBaseUser) -> Actor:
        return cls(kind="user", label=f"user:{user.get_username()}", user_id=user.pk)

    @classmethod
    def system(cls, what: str = "system") -> Actor:
        return cls(kind="system", label=what)
