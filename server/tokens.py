"""Players' secret tokens: made here, given to the player once, and kept only as hashes."""

from __future__ import annotations

import hashlib
import secrets


def new_token() -> str:
    """A fresh secret: 32 random bytes, URL-safe text."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """What the store keeps instead of a token: its SHA-256, in hex."""
    return hashlib.sha256(token.encode()).hexdigest()
