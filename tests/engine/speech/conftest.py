"""The real wyoming-piper fixtures, shared with tests/ha from tests/support/piper.py."""

from tests.support.piper import PiperPeer, piper, piper_process, proxy

__all__ = ["PiperPeer", "piper", "piper_process", "proxy"]
