"""Reading a request frame safely, around the strict decoders of server/protocol.py.

A good request is decoded there in one pass. What is here refuses a frame before any parser reads it (too
large, binary, nested too deep), reads the envelope (``type`` and ``id``) of a frame that pass refused, so
that the error can echo its ``id``, and peeks at the ``id`` of a frame that will not be decoded at all.
``server.protocol`` re-exports what its users need of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Annotated, TypeAlias

import msgspec

from server.errors import ErrorCode, ProtocolError

MAX_ID_LENGTH = 64

RequestId: TypeAlias = (
    Annotated[int, msgspec.Meta(ge=-(2**53), le=2**53)]
    | Annotated[str, msgspec.Meta(max_length=MAX_ID_LENGTH)]
    | None
)


class UndecodableRequest(ProtocolError):
    """A frame that is not a valid request; carries the ``id`` when the frame had a readable one."""

    def __init__(self, code: ErrorCode, message: str, request_id: int | str | None) -> None:
        super().__init__(code, message)
        self.request_id = request_id


class Envelope(msgspec.Struct):
    """What every request has: its ``type``, read leniently so that an error can echo its ``id``."""

    type: str
    id: RequestId = None


class _IdOnly(msgspec.Struct):
    id: RequestId = None


UNREADABLE = (msgspec.DecodeError, RecursionError, UnicodeDecodeError)
"""What decoding a frame that is not JSON raises: msgspec raises ``RecursionError`` for nesting deeper than
Python's recursion limit (a 4 KiB frame holds 2,000 levels) and ``UnicodeDecodeError`` for a string that is
not UTF-8 (frames are read as bytes, unchecked)."""

_envelope_decoder = msgspec.json.Decoder(Envelope)
_id_decoder = msgspec.json.Decoder(_IdOnly)


MAX_NESTING = 64
"""How deep a request's arrays and objects may nest (ours nest three deep). A deeper frame is refused before
any parser reads it: msgspec and json recurse once a level, a frame of 4 KiB holds 2,000 levels, and near
Python's recursion limit whatever else runs (a garbage collection's callbacks, the hook that reports their
failure) fails for want of stack, as a run of ``plyarena bench fuzz`` showed."""

_QUOTE, _BACKSLASH = 0x22, 0x5C


def too_deep(data: bytes) -> bool:
    """Whether ``data`` nests arrays and objects more than :data:`MAX_NESTING` deep, brackets within
    strings aside. Few frames hold that many brackets at all, and only those are scanned."""
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING:
        return False
    depth = 0
    scanned = iter(data)
    for byte in scanned:
        if byte == _QUOTE:
            _skip_string(scanned)
        elif byte in b"[{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif byte in b"]}":
            depth -= 1
    return False


def _skip_string(scanned: Iterator[int]) -> None:
    """Read ``scanned`` past the quote that closes the string just opened (to the end, if none does), so
    that the brackets within it are not counted; a backslash escapes the byte after it."""
    for byte in scanned:
        if byte == _BACKSLASH:
            next(scanned, None)
        elif byte == _QUOTE:
            return


def frame_refusal(data: bytes, max_bytes: int, *, binary: bool) -> UndecodableRequest:
    """The error for a frame refused before any parser reads it: over ``max_bytes``, else ``binary``, else
    (the one reason left) nested too deep, whose ``id`` is not looked for."""
    if len(data) > max_bytes:
        message = f"a frame of {len(data)} bytes is over the limit of {max_bytes}"
        return UndecodableRequest(ErrorCode.FRAME_TOO_LARGE, message, peek_request_id(data, len(data)))
    if binary:
        message = "requests are JSON text in text frames: a binary frame is not read"
        return UndecodableRequest(ErrorCode.BINARY_FRAME, message, peek_request_id(data, len(data)))
    message = f"not a request: arrays and objects nested more than {MAX_NESTING} deep"
    return UndecodableRequest(ErrorCode.BAD_JSON, message, None)


def read_envelope(data: bytes) -> Envelope:
    """The ``type`` and ``id`` of a frame that was no valid request; raises :class:`UndecodableRequest` for
    one that is not even a JSON object with a ``type``, with the frame's ``id`` where it has one to echo."""
    if not data.lstrip()[:1] == b"{":
        raise UndecodableRequest(ErrorCode.BAD_JSON, "a request must be a JSON object", None)
    try:
        return _envelope_decoder.decode(data)
    except msgspec.ValidationError as error:
        raise UndecodableRequest(ErrorCode.BAD_FIELD, str(error), peek_request_id(data, len(data))) from None
    except UNREADABLE as error:
        if (lone_surrogate := _lone_surrogate(data)) is not None:
            raise lone_surrogate from None
        message = f"not a JSON object: {error}"
        raise UndecodableRequest(ErrorCode.BAD_JSON, message, peek_request_id(data, len(data))) from None


def peek_request_id(frame: bytes | str, max_bytes: int) -> RequestId:
    """The ``id`` of a request that will not be decoded (e.g. rate-limited), if it is easy to read; also
    from a frame that is a whole JSON object with more after it (``{...} xyz``), which msgspec, reading
    whole documents only, refuses, though it says where the object ended."""
    if len(frame) > max_bytes or too_deep(frame.encode() if isinstance(frame, str) else frame):
        return None
    try:
        return _id_decoder.decode(frame).id
    except msgspec.ValidationError:  # read, but its id (if any) is not one to echo
        return None
    except UNREADABLE as error:
        trailing = _TRAILING.search(str(error))
    if trailing is None:
        return None
    try:
        data = frame.encode() if isinstance(frame, str) else frame  # (the position is in UTF-8 bytes)
        return _id_decoder.decode(data[: int(trailing.group(1)) - 1]).id
    except (msgspec.MsgspecError, UnicodeError, RecursionError):
        return None


_TRAILING = re.compile(r"trailing characters \(byte ([0-9]+)\)")
"""How msgspec says a document ended before the frame did, counting from 1 the first byte past it: the
rest is cut off and the id read again, at the cost of a second pass of its fast decoder."""


def _lone_surrogate(data: bytes) -> UndecodableRequest | None:
    """The error for a frame that is a JSON object but for a lone surrogate escape (``"\\ud800"``: half of
    a UTF-16 pair, no character, which no UTF-8 can hold), with the frame's ``id`` if it is one to echo;
    ``None`` for a frame that is not JSON in another way.

    msgspec refuses such a string as it reads the envelope, before the ``id``. Python's json module reads
    lone surrogates, so it takes a second look: only on the way to an error, only at a frame with a
    surrogate escape in it, and only within the size limit that ``decode_request`` checks first."""
    if _SURROGATE_ESCAPE.search(data) is None:
        return None
    try:
        document = json.loads(data.decode(), parse_constant=_refuse_constant)
        json.dumps(document, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # (read, but one of its strings holds a lone surrogate)
        pass
    except (ValueError, RecursionError):  # (not JSON in another way, or too deep)
        return None
    else:  # (all its strings are Unicode: msgspec refused it for something else)
        return None
    if not isinstance(document, dict):
        return None
    message = (
        "strings must be valid Unicode: a lone surrogate escape (\\ud800 to \\udfff) is half a character"
    )
    return UndecodableRequest(ErrorCode.BAD_JSON, message, _echoable_id(document.get("id")))


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A ``\\u`` escape of a UTF-16 surrogate (U+D800-U+DFFF), which a frame with a lone one must hold."""


def _refuse_constant(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def _echoable_id(value: object) -> RequestId:
    """``value`` if it is a request id that an error can echo: an integer or a short string, all Unicode."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            return None
    try:
        return msgspec.convert(value, RequestId)
    except msgspec.ValidationError:
        return None
