"""The REST client's bookkeeping: the routes limits belong to, the nonce of a piece."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wakeful.channels.discord.client import NONCE_CHARS, nonce_of
from wakeful.channels.discord.rest import route_key, shown


def test_a_channel_keeps_its_id_in_the_route_and_later_ids_are_folded() -> None:
    """Discord limits each channel apart (a top-level resource); a message id is not one."""
    first = route_key("POST", "/channels/1500000000000000001/messages")
    other = route_key("POST", "/channels/1500000000000000002/messages")
    assert first != other
    assert route_key("DELETE", "/channels/15000000000000001/messages/1300000000000000009") == (
        "DELETE /channels/15000000000000001/messages/{id}"
    )
    assert route_key("GET", "/gateway/bot") == "GET /gateway/bot"


def test_an_interactions_token_is_never_shown() -> None:
    assert "secret-token" not in shown(
        "POST", "/interactions/1300000000000000009/secret-token/callback"
    )


@given(st.text(min_size=1, max_size=200), st.text(min_size=1, max_size=200))
def test_a_nonce_fits_discords_25_characters_and_names_its_piece(a: str, b: str) -> None:
    """The same piece always gets the same nonce (a retry is recognised); another piece
    gets another one."""
    assert len(nonce_of(a)) <= NONCE_CHARS and nonce_of(a) == nonce_of(a)
    assert (nonce_of(a) == nonce_of(b)) == (a == b)
