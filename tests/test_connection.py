"""Sending to a connection: the frames the server writes itself are websockets' own, byte for byte."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st
from websockets.frames import Frame, Opcode
from websockets.protocol import CLOSING, OPEN

from server.connection import Connection, TokenBucket, text_frame

# The lengths where the header changes shape: 7 bits, then 16, then 64.
_EDGES = (0, 1, 125, 126, 127, 65_535, 65_536, 70_000)


@given(st.one_of(st.binary(max_size=300), st.sampled_from(_EDGES).map(lambda length: b"x" * length)))
def test_a_text_frame_is_the_one_websockets_serializes(data: bytes) -> None:
    assert text_frame(data) == Frame(Opcode.TEXT, data).serialize(mask=False)


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def get_write_buffer_size(self) -> int:
        return 0

    def write(self, data: bytes) -> None:
        self.written.append(data)


def _connection(state: object) -> tuple[Connection, _Transport]:
    transport = _Transport()
    protocol = SimpleNamespace(state=state)
    websocket = SimpleNamespace(transport=transport, protocol=protocol, remote_address=None)
    return Connection(websocket, TokenBucket(20, 40), 4_096, None), transport  # type: ignore[arg-type]


def test_a_message_goes_out_as_one_text_frame_while_the_connection_is_open() -> None:
    connection, transport = _connection(OPEN)
    connection.push(b'{"type":"ok"}')
    assert transport.written == [b'\x81\x0d{"type":"ok"}']


def test_nothing_is_sent_once_the_closing_handshake_has_begun() -> None:
    """After a close frame, RFC 6455 allows no data frame: websockets' protocol refuses one then too."""
    connection, transport = _connection(CLOSING)
    connection.push(b'{"type":"ok"}')
    assert transport.written == []
