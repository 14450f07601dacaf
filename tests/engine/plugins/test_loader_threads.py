"""Loading a plugin while other threads import: HA imports in its executor at the same time."""

from __future__ import annotations

import sys
import threading
import types

from custom_components.companion_agent.engine.plugins import loader


def test_forgetting_a_plugin_while_another_thread_imports() -> None:
    """``sys.modules`` changing under ``_forget`` (another thread importing) is no error."""
    stop = threading.Event()

    def import_elsewhere() -> None:
        """Add and drop modules as fast as an importing thread could."""
        n = 0
        while not stop.is_set():
            name = f"companion_test_elsewhere_{n % 64}"
            sys.modules[name] = types.ModuleType(name)
            sys.modules.pop(f"companion_test_elsewhere_{(n + 32) % 64}", None)
            n += 1

    other = threading.Thread(target=import_elsewhere, daemon=True)
    package = f"{loader.PACKAGE}.race_probe"
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows at once
    other.start()
    try:
        for _ in range(300):
            sys.modules[package] = types.ModuleType(package)
            sys.modules[f"{package}.part"] = types.ModuleType(f"{package}.part")
            loader._forget(package)
            assert package not in sys.modules
            assert f"{package}.part" not in sys.modules
    finally:
        stop.set()
        other.join()
        sys.setswitchinterval(interval)
        for name in [n for n in list(sys.modules) if n.startswith("companion_test_elsewhere_")]:
            sys.modules.pop(name, None)
