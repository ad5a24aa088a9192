"""The cursor's old address: ``wakeful.sources.subscriptions`` imports it from here.

The e-mail state itself is :class:`~wakeful.channels.email.mail_state.MailState`
on the store's state port; this module only keeps that import working.
"""

from wakeful.channels.email.cursor import Cursor, CursorStore

__all__ = ["Cursor", "CursorStore"]
