"""The configured mail accounts with their resolved passwords, looked up by name."""

from __future__ import annotations

from dataclasses import dataclass

from wakeful.channels.email.config import EmailAccountConfig


@dataclass(frozen=True)
class MailAccount:
    config: EmailAccountConfig
    password: str

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def address(self) -> str:
        return self.config.address or self.config.username


class MailAccounts:
    def __init__(self, accounts: list[MailAccount]) -> None:
        self._by_name = {a.name: a for a in accounts}

    def __bool__(self) -> bool:
        return bool(self._by_name)

    def names(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str | None) -> MailAccount:
        """The account called ``name`` (or the first); KeyError with the known names."""
        if name is None and self._by_name:
            return next(iter(self._by_name.values()))
        if name in self._by_name:
            return self._by_name[name]
        known = ", ".join(self._by_name) or "(none configured)"
        raise KeyError(f"no email account named {name!r}; the accounts are: {known}")
